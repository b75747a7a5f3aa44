package storetest

import (
	"testing"
	"time"

	"knit.dev/knit/internal/store"
)

// testStartRun: StartRun records a revision and a run at it in one
// transaction, as PutRevision and CreateRun would one after the other; a
// run it cannot create leaves no revision behind.
func testStartRun(t *testing.T, s store.Store) {
	ctx := t.Context()
	a := rev("a", at(0))
	got, err := s.StartRun(ctx, env("team/web"), &a, run("r1", "team/web", at(0)))
	must(t, err)
	if got.Number != 1 || got.Hash != "h-a" {
		t.Errorf("StartRun's revision: %+v, want number 1 of h-a", got)
	}
	r1, err := s.Run(ctx, "r1")
	must(t, err)
	if r1.Revision != 1 || r1.Status != store.StatusRunning {
		t.Errorf("StartRun's run: %+v, want running at revision 1", r1)
	}
	e, err := s.Environment(ctx, "team/web")
	must(t, err)
	if e.Revision != 1 || e.Team != "team" {
		t.Errorf("the environment after StartRun: %+v", e)
	}

	// The same spec again is the same revision, as PutRevision says.
	got, err = s.StartRun(ctx, env("team/web"), &a, run("r2", "team/web", at(time.Minute)))
	must(t, err)
	if got.Number != 1 {
		t.Errorf("StartRun of an unchanged spec: revision %d, want 1", got.Number)
	}

	// No revision: the run keeps the one it names.
	plan := run("r3", "team/web", at(2*time.Minute))
	plan.Kind, plan.Revision = "plan", 0
	got, err = s.StartRun(ctx, env("team/web"), nil, plan)
	must(t, err)
	if got.Number != 0 {
		t.Errorf("StartRun with no revision returned %+v", got)
	}
	r3, err := s.Run(ctx, "r3")
	must(t, err)
	equal(t, "a run started with no revision", r3, plan)

	// A run that cannot be created (its ID is taken) records nothing.
	b := rev("b", at(3*time.Minute))
	if _, err := s.StartRun(ctx, env("team/web"), &b, run("r1", "team/web", at(3*time.Minute))); err == nil {
		t.Fatal("StartRun with a run ID that exists succeeded")
	}
	latest, err := s.Revision(ctx, "team/web", 0)
	must(t, err)
	if latest.Number != 1 {
		t.Errorf("a failed StartRun left revision %d (%s) behind", latest.Number, latest.Hash)
	}
	if _, err := s.StartRun(ctx, env("team/web"), &b, store.Run{Env: "team/web"}); err == nil {
		t.Error("StartRun of a run with no ID succeeded")
	}
}
