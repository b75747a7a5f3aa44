package storetest

import (
	"testing"
	"time"

	"knit.dev/knit/internal/store"
)

// testPreviewIsNotTheLastRun: a branch's preview planned against an
// environment is a run of the branch: the environment's detail, summary
// and row show its own newest run, and its components their own newest
// component runs, never the preview's (nor a component only the branch has).
func testPreviewIsNotTheLastRun(t *testing.T, s store.Store) {
	ctx := t.Context()
	_, err := s.PutRevision(ctx, env("team/web"), rev("a", at(0)))
	must(t, err)
	must(t, s.CreateRun(ctx, run("r1", "team/web", at(time.Hour))))
	p := run("p1", "team/web", at(2*time.Hour))
	p.Kind, p.Source = "plan", "preview"
	must(t, s.CreateRun(ctx, p))
	for _, c := range []struct{ run, comp string }{{"r1", "web"}, {"p1", "web"}, {"p1", "cache"}} {
		lockFor(t, s, "team/web", c.run)
		must(t, s.StartComponentRun(ctx, &store.ComponentRun{RunID: c.run, Env: "team/web", Component: c.comp, Operation: "apply",
			Status: "applied", StartedAt: at(time.Hour)}))
	}
	d, err := s.EnvironmentDetail(ctx, "team/web")
	must(t, err)
	if d.LastRun == nil || d.LastRun.ID != "r1" {
		t.Errorf("detail's last run = %+v, want r1, not the preview", d.LastRun)
	}
	if len(d.Components) != 1 || d.Components[0].Name != "web" || d.Components[0].LastRun.RunID != "r1" {
		t.Errorf("detail's components = %+v, want web last run in r1", d.Components)
	}
	sums, err := s.EnvironmentSummaries(ctx, store.EnvironmentFilter{})
	must(t, err)
	if len(sums) != 1 || sums[0].LastRun == nil || sums[0].LastRun.ID != "r1" {
		t.Errorf("summaries = %+v, want the last run r1", sums)
	}
	rows, _, err := s.EnvironmentRows(ctx, store.EnvironmentRowFilter{})
	must(t, err)
	if len(rows) != 1 || rows[0].LastRun == nil || rows[0].LastRun.ID != "r1" {
		t.Errorf("rows = %+v, want the last run r1", rows)
	}
}
