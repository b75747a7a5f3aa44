package engine_test

import (
	"context"
	"errors"
	"testing"

	"knit.dev/knit/internal/engine"
	"knit.dev/knit/internal/store"
)

// TestARunStartsAndEndsInOneWriteEach (issue 39): an apply records its
// revision and its run in one write (StartRun), and its outcome and the
// release of its lock in another; the lock is free once it returns.
func TestARunStartsAndEndsInOneWriteEach(t *testing.T) {
	ctx := context.Background()
	h := newHarness(t)
	fs := &failingStore{Store: h.st}
	h.e.Store = fs
	env := parse(t, diamond)
	res, err := h.e.Apply(ctx, env, engine.Options{Actor: "tester"})
	if err != nil || res.Status != store.StatusSucceeded {
		t.Fatalf("apply: %v %+v", err, res)
	}
	for op, want := range map[string]int{"StartRun": 1, "PutRevision": 0, "CreateRun": 0, "RecordOutcome": 1, "ReleaseLock": 0} {
		if got := fs.calls[op]; got != want {
			t.Errorf("%s: %d writes, want %d (all: %v)", op, got, want, fs.calls)
		}
	}
	if l, err := h.st.Lock(ctx, env.ID()); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("the lock after the run: %+v, %v; want none", l, err)
	}
	runs, err := h.st.Runs(ctx, env.ID(), store.RunFilter{Limit: 1})
	if err != nil || len(runs) != 1 || runs[0].Revision != 1 {
		t.Errorf("the run's record: %+v, %v; want one at revision 1", runs, err)
	}
}

// TestARunWhoseOutcomeWriteFailsStillFreesItsLock: the outcome's first
// write fails; the run is recorded failed by the second, which frees the
// lock with it, and the next apply goes through.
func TestARunWhoseOutcomeWriteFailsStillFreesItsLock(t *testing.T) {
	ctx := context.Background()
	h := newHarness(t)
	fs := &failingStore{Store: h.st, failOp: "RecordOutcome"}
	h.e.Store = fs
	env := parse(t, diamond)
	res, err := h.e.Apply(ctx, env, engine.Options{Actor: "tester"})
	if err == nil && res.Status == store.StatusSucceeded {
		t.Fatalf("an apply whose outcome write failed claims success: %+v", res)
	}
	if l, err := h.st.Lock(ctx, env.ID()); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("the lock after the run: %+v, %v; want none", l, err)
	}
	runs, err := h.st.Runs(ctx, env.ID(), store.RunFilter{Limit: 1})
	if err != nil || len(runs) != 1 || runs[0].Status != store.StatusFailed {
		t.Errorf("the run's record: %+v, %v; want it failed", runs, err)
	}
	if res, err := h.e.Apply(ctx, env, engine.Options{Actor: "tester"}); err != nil || res.Status != store.StatusSucceeded {
		t.Errorf("the next apply: %v %+v", err, res)
	}
}
