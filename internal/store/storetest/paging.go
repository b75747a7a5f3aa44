package storetest

import (
	"testing"
	"time"

	"knit.dev/knit/internal/store"
)

// testAppliedRevision: the applied revision is kept apart from the latest
// seen, and revisions list newest first, in pages.
func testAppliedRevision(t *testing.T, s store.Store) {
	ctx := t.Context()
	wantNotFound(t, s.SetAppliedRevision(ctx, "team/web", 1), "applied revision of an unknown environment")
	for i, sp := range []string{"a", "b", "c"} {
		_, err := s.PutRevision(ctx, env("team/web"), rev(sp, at(time.Duration(i)*time.Minute)))
		must(t, err)
	}
	e, err := s.Environment(ctx, "team/web")
	must(t, err)
	if e.Revision != 3 || e.AppliedRevision != 0 {
		t.Errorf("before any apply: latest %d, applied %d; want 3, 0", e.Revision, e.AppliedRevision)
	}
	must(t, s.SetAppliedRevision(ctx, "team/web", 2))
	wantNotFound(t, s.SetAppliedRevision(ctx, "team/web", 9), "applied revision that does not exist")
	e, err = s.Environment(ctx, "team/web")
	must(t, err)
	if e.Revision != 3 || e.AppliedRevision != 2 {
		t.Errorf("latest %d, applied %d; want 3, 2", e.Revision, e.AppliedRevision)
	}
	revs, err := s.Revisions(ctx, "team/web", store.RevisionFilter{Limit: 2})
	must(t, err)
	if len(revs) != 2 || revs[0].Number != 3 || revs[1].Number != 2 || string(revs[0].Spec) != `{"spec":"c"}` {
		t.Errorf("first page of revisions %+v", revs)
	}
	revs, err = s.Revisions(ctx, "team/web", store.RevisionFilter{Before: 2})
	must(t, err)
	if len(revs) != 1 || revs[0].Number != 1 {
		t.Errorf("revisions before 2: %+v", revs)
	}
}

// testPaging: environments, runs and audit events filter and page on a cursor.
func testPaging(t *testing.T, s store.Store) {
	ctx := t.Context()
	for i, id := range []string{"a/1", "a/2", "b/1"} {
		e := env(id)
		e.Team = id[:1]
		_, err := s.PutRevision(ctx, e, rev(id, at(time.Duration(i)*time.Minute)))
		must(t, err)
	}
	must(t, s.SetEnvironmentStatus(ctx, "a/2", "failed"))
	ids := func(envs []store.Environment) (out []string) {
		for _, e := range envs {
			out = append(out, e.ID)
		}
		return out
	}
	all, err := s.Environments(ctx, store.EnvironmentFilter{Limit: 2})
	must(t, err)
	equal(t, "first page", ids(all), []string{"a/1", "a/2"})
	rest, err := s.Environments(ctx, store.EnvironmentFilter{After: "a/2"})
	must(t, err)
	equal(t, "after a/2", ids(rest), []string{"b/1"})
	team, err := s.Environments(ctx, store.EnvironmentFilter{Team: "a", Status: "failed"})
	must(t, err)
	equal(t, "team a, failed", ids(team), []string{"a/2"})

	for i := range 3 {
		r := run(string(rune('p'+i)), "a/1", at(time.Duration(i)*time.Minute))
		r.Source = "api"
		must(t, s.CreateRun(ctx, r))
	}
	runs, err := s.Runs(ctx, "a/1", store.RunFilter{Before: "r", Limit: 5})
	must(t, err)
	if len(runs) != 2 || runs[0].ID != "q" || runs[1].ID != "p" || runs[0].Source != "api" {
		t.Errorf("runs before r: %+v", runs)
	}
	failed := run("s", "a/1", at(time.Hour))
	failed.Status = store.StatusFailed
	must(t, s.CreateRun(ctx, failed))
	onlyFailed, err := s.Runs(ctx, "", store.RunFilter{Status: store.StatusFailed})
	must(t, err)
	if len(onlyFailed) != 1 || onlyFailed[0].ID != "s" {
		t.Errorf("failed runs: %+v", onlyFailed)
	}
	every, err := s.Runs(ctx, "", store.RunFilter{})
	must(t, err)
	if len(every) != 4 {
		t.Errorf("runs of every environment: %d", len(every))
	}

	for i, actor := range []string{"alice", "bob", "alice"} {
		must(t, s.AppendAudit(ctx, store.AuditEvent{Env: "a/1", Actor: actor, Action: "apply", Time: at(time.Duration(i) * time.Hour)}))
	}
	alice, err := s.Audit(ctx, store.AuditFilter{Actor: "alice"})
	must(t, err)
	if len(alice) != 2 {
		t.Fatalf("alice's events: %+v", alice)
	}
	after, err := s.Audit(ctx, store.AuditFilter{After: alice[0].ID, Limit: 1})
	must(t, err)
	if len(after) != 1 || after[0].Actor != "bob" {
		t.Errorf("one event after alice's first: %+v", after)
	}
	window, err := s.Audit(ctx, store.AuditFilter{Since: at(time.Hour), Until: at(2 * time.Hour)})
	must(t, err)
	if len(window) != 1 || window[0].Actor != "bob" {
		t.Errorf("events in [1h, 2h): %+v", window)
	}
}

// testLatestComponentRuns: the newest component run of each component, with
// its machine-readable code, and no log.
func testLatestComponentRuns(t *testing.T, s store.Store) {
	ctx := t.Context()
	for i, id := range []string{"r1", "r2"} {
		must(t, s.CreateRun(ctx, run(id, "team/web", at(time.Duration(i)*time.Hour))))
		lockFor(t, s, "team/web", id)
		for _, c := range []string{"db", "app"} {
			if id == "r2" && c == "db" {
				continue
			}
			cr := &store.ComponentRun{RunID: id, Env: "team/web", Component: c, Operation: "apply", Status: "waiting",
				Code: "waiting: upstream db awaiting approval", Log: "log", StartedAt: at(time.Duration(i) * time.Hour)}
			must(t, s.StartComponentRun(ctx, cr))
		}
	}
	latest, err := s.LatestComponentRuns(ctx, "team/web")
	must(t, err)
	if len(latest) != 2 || latest[0].Component != "app" || latest[0].RunID != "r2" || latest[1].RunID != "r1" ||
		latest[0].Code != "waiting: upstream db awaiting approval" || latest[0].Log != "" {
		t.Errorf("latest component runs %+v", latest)
	}
}
