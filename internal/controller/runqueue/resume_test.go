package runqueue_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"knit.dev/knit/internal/adapters"
	"knit.dev/knit/internal/controller/runqueue"
	"knit.dev/knit/internal/engine"
	"knit.dev/knit/internal/knit"
	"knit.dev/knit/internal/runner"
	"knit.dev/knit/internal/runner/fake"
	"knit.dev/knit/internal/spec"
	"knit.dev/knit/internal/store"
	"knit.dev/knit/internal/store/sqlite"
)

// TestARollbackAShutdownInterruptedResumesToItsTarget: a shutdown
// interrupted a rollback from revision 2 to revision 1 after it recorded
// its target (revision 3, revision 1's spec) and before it recorded it
// applied; the next start resumes it as a rollback to revision 3, and
// revision 1's spec ends applied, not revision 2's again.
func TestARollbackAShutdownInterruptedResumesToItsTarget(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	st, err := sqlite.Open(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	k, err := adapters.Open(ctx, adapters.Config{Config: knit.Config{DataDir: dir, Store: st, CloseStore: true,
		Runners: map[string]runner.Runner{spec.TypeScript: &fake.Runner{}}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { k.Close() })
	for i, doc := range []string{envDoc, strings.Replace(envDoc, `apply: "true"`, `apply: "echo v2"`, 1)} {
		env, diags := spec.Parse("one.yaml", t.TempDir(), []byte(doc))
		if diags.HasErrors() {
			t.Fatal(diags)
		}
		if res, err := knit.NewRun(k, knit.RunRequest{Kind: engine.KindApply, Env: env, Actor: "t"}).Run(ctx); err != nil || res.Revision != i+1 {
			t.Fatalf("apply revision %d: %+v %v", i+1, res, err)
		}
	}
	first, err := st.Revision(ctx, "pay/one", 1)
	if err != nil {
		t.Fatal(err)
	}
	target, err := st.PutRevision(ctx, store.Environment{ID: "pay/one", Team: "pay", Name: "one"},
		store.Revision{Env: "pay/one", Hash: first.Hash, Source: first.Source, Spec: first.Spec, Root: first.Root})
	if err != nil || target.Number != 3 {
		t.Fatalf("record the rollback's target: %+v %v", target, err)
	}
	now := time.Now()
	if err := st.CreateRun(ctx, store.Run{ID: knit.NewRunID(), Env: "pay/one", Kind: engine.KindRollback, Revision: 3,
		Status: store.StatusInterrupted, Actor: "t", StartedAt: now, FinishedAt: now}); err != nil {
		t.Fatal(err)
	}
	if err := k.State().SetSettings(ctx, map[string]string{runqueue.SettingResume + "pay/one": string(engine.KindRollback)}); err != nil {
		t.Fatal(err)
	}
	q := runqueue.New(k, runqueue.Config{Max: 1, Actor: "knit-serve", Logger: quiet})
	o := listen(q)
	if err := q.Resume(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(run(t, q))
	out := o.wait(t, 1)[0]
	if out.Job.Req.Kind != engine.KindRollback || out.Result == nil || out.Result.Status != store.StatusSucceeded {
		t.Fatalf("the resume: %s %+v %v, want a rollback that succeeded", out.Job.Req.Kind, out.Result, out.Refused)
	}
	e, err := st.Environment(ctx, "pay/one")
	if err != nil {
		t.Fatal(err)
	}
	if got, err := st.Revision(ctx, "pay/one", e.AppliedRevision); err != nil || got.Hash != first.Hash {
		t.Errorf("applied after the resume: revision %d %v, want revision 1's spec", e.AppliedRevision, err)
	}
}
