package storetest

import (
	"errors"
	"testing"

	"knit.dev/knit/internal/store"
)

// testRollouts: an environment's rollout is written only from the version
// its writer read (two writers at once: one wins), every field kept,
// each environment's apart; its audit is in the same transaction.
func testRollouts(t *testing.T, s store.Store) {
	ctx := t.Context()
	if _, err := s.Rollout(ctx, "shop/prod"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("rollout before any: err = %v, want store.ErrNotFound", err)
	}
	r := store.Rollout{Env: "shop/prod", ID: "ro-1", State: "running", Step: 0, Weight: 0, Detail: `{"steps":[]}`, UpdatedAt: at(1)}
	must(t, s.PutRollout(ctx, r, nil))
	if err := s.PutRollout(ctx, r, nil); !errors.Is(err, store.ErrConflict) {
		t.Errorf("writing version 0 twice: err = %v, want store.ErrConflict", err)
	}
	r.Version, r.Step, r.Weight, r.RunID, r.State, r.UpdatedAt = 1, 2, 10, "run-7", "paused", at(2)
	audit := &store.AuditEvent{Env: "shop/prod", Actor: "knit-serve", Action: "rollout-step", RunID: "run-7", Detail: "step 2: weight 10", Time: at(2)}
	must(t, s.PutRollout(ctx, r, audit))
	must(t, s.PutRollout(ctx, store.Rollout{Env: "shop/dev", ID: "ro-2", State: "succeeded", Step: 3, Weight: 0, Detail: "{}", UpdatedAt: at(3)}, nil))
	got, err := s.Rollout(ctx, "shop/prod")
	must(t, err)
	r.Version = 2
	equal(t, "rollout", got, r)
	all, err := s.Rollouts(ctx)
	must(t, err)
	if len(all) != 2 || all[0].Env != "shop/dev" || all[1] != r {
		t.Errorf("rollouts = %+v", all)
	}
	evs, err := s.Audit(ctx, store.AuditFilter{Env: "shop/prod"})
	must(t, err)
	if len(evs) != 1 || evs[0].Action != "rollout-step" {
		t.Errorf("audit = %+v, want the step's", evs)
	}
	stale := r
	stale.Version, stale.Weight = 1, 50
	if err := s.PutRollout(ctx, stale, &store.AuditEvent{Env: "shop/prod", Action: "rollout-step", Time: at(4)}); !errors.Is(err, store.ErrConflict) {
		t.Errorf("writing from a stale version: err = %v, want store.ErrConflict", err)
	}
	if evs, _ := s.Audit(ctx, store.AuditFilter{Env: "shop/prod"}); len(evs) != 1 {
		t.Errorf("a refused write appended its audit: %+v", evs)
	}
	// A new rollout replaces the finished one from its version.
	next := store.Rollout{Env: "shop/prod", ID: "ro-3", Version: 2, State: "running", Detail: "{}", UpdatedAt: at(5)}
	must(t, s.PutRollout(ctx, next, nil))
	if got, _ := s.Rollout(ctx, "shop/prod"); got.ID != "ro-3" || got.Step != 0 || got.Version != 3 {
		t.Errorf("after the new rollout: %+v", got)
	}
}
