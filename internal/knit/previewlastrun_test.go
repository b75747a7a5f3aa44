package knit_test

import (
	"context"
	"strings"
	"testing"

	"knit.dev/knit/internal/knit"
	"knit.dev/knit/internal/store"
)

// TestABranchPreviewIsNotTheEnvironmentsLastRun: knit status, the
// environments list and the dashboard show the environment's own last
// run, not a branch's preview planned against it (a preview is a run of
// the branch, listed with the previews).
func TestABranchPreviewIsNotTheEnvironmentsLastRun(t *testing.T) {
	ctx := context.Background()
	k := openWith(t, dbRunner())
	applied := apply(t, k, parse(t, envDoc("shop", "dev")), "alice", true)
	branch := parse(t, strings.Replace(envDoc("shop", "dev"), "{name: size, value: 1}", "{name: size, value: 2}", 1))
	p, err := knit.NewPreview(k, knit.PreviewRequest{Policy: fakeRunners, Branch: "feature/x", Commit: previewCommit, Change: store.PreviewUpdate, Env: branch, Actor: "ada"}).Run(ctx)
	if err != nil || p.Status != store.PreviewPlanned {
		t.Fatalf("preview = %+v, %v", p, err)
	}
	v, err := knit.NewRecords(k).Environment(ctx, "shop/dev")
	if err != nil {
		t.Fatal(err)
	}
	if v.LastRun == nil || v.LastRun.ID != applied.RunID {
		t.Errorf("status's last run = %+v, want the apply %s, not the preview %s", v.LastRun, applied.RunID, p.RunID)
	}
	for _, c := range v.Components {
		if c.LastRun != nil && c.LastRun.RunID == p.RunID {
			t.Errorf("component %s's last run is the preview %s", c.Name, p.RunID)
		}
	}
	list, err := knit.NewRecords(k).EnvironmentList(ctx, knit.EnvironmentListFilter{})
	if err != nil || len(list.Rows) != 1 {
		t.Fatalf("list = %+v, %v", list, err)
	}
	if r := list.Rows[0].LastRun; r == nil || r.ID != applied.RunID {
		t.Errorf("the list's last run = %+v, want the apply %s", r, applied.RunID)
	}
}
