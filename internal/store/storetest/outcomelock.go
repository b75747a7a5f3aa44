package storetest

import (
	"errors"
	"testing"
	"time"

	"knit.dev/knit/internal/store"
)

// testRecordOutcomeReleasesTheLock: an outcome with ReleaseLock ends the
// run and frees its environment's lock in one write; one the store refuses
// or that fails frees nothing, and a lock another run holds stays its.
func testRecordOutcomeReleasesTheLock(t *testing.T, s store.Store) {
	ctx := t.Context()
	_, err := s.PutRevision(ctx, env("team/web"), rev("a", at(0)))
	must(t, err)
	lockOf := func() (store.Lock, error) { return s.Lock(ctx, "team/web") }
	outcome := func(runID string) store.RunOutcome {
		return store.RunOutcome{RunID: runID, Status: store.StatusSucceeded, At: at(time.Minute), EnvStatus: "provisioned",
			Audit:       &store.AuditEvent{Env: "team/web", Actor: "alice", Action: "apply", RunID: runID, Detail: "succeeded"},
			ReleaseLock: true}
	}

	// Refused: run-b holds the lock; it stays run-b's.
	must(t, acquire(t, s, holder("team/web", "run-b"), time.Minute, nil))
	startRun(t, s, "run-a", 1, at(0))
	wantLockLost(t, s.RecordOutcome(ctx, outcome("run-a")), "RecordOutcome of a run whose lock another holds")
	if l, err := lockOf(); err != nil || l.RunID != "run-b" {
		t.Errorf("after a refused outcome the lock is %+v (%v), want run-b's", l, err)
	}
	must(t, s.ReleaseLock(ctx, "team/web", "run-b"))

	// Failed (an audit event with no action): the run keeps its lock.
	must(t, acquire(t, s, holder("team/web", "run-a"), time.Minute, nil))
	bad := outcome("run-a")
	bad.Audit.Action = ""
	if err := s.RecordOutcome(ctx, bad); err == nil {
		t.Fatal("RecordOutcome with an invalid audit event succeeded")
	}
	if l, err := lockOf(); err != nil || l.RunID != "run-a" {
		t.Errorf("after a failed outcome the lock is %+v (%v), want run-a's", l, err)
	}

	// Whole: the run ended and the lock is free for the next run.
	must(t, s.RecordOutcome(ctx, outcome("run-a")))
	if l, err := lockOf(); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("after the outcome the lock is still held: %+v", l)
	}
	r, err := s.Run(ctx, "run-a")
	must(t, err)
	equal(t, "the run's status", r.Status, store.StatusSucceeded)
	must(t, acquire(t, s, holder("team/web", "run-c"), time.Minute, nil))
}
