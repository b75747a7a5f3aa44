package storetest

import (
	"errors"
	"testing"
	"time"

	"knit.dev/knit/internal/store"
)

// testRecordOutcome: a run's outcome (its end, its audit event, its
// environment's status) commits whole or not at all. Each refused or
// failing outcome below fails in a different part, after the parts before
// it were written in the same transaction, and must leave all three as
// they were.
func testRecordOutcome(t *testing.T, s store.Store, c *clock) {
	ctx := t.Context()
	_, err := s.PutRevision(ctx, env("team/web"), rev("a", at(0)))
	must(t, err)
	must(t, s.SetEnvironmentStatus(ctx, "team/web", "provisioned"))
	outcome := func(runID, action string) store.RunOutcome {
		return store.RunOutcome{RunID: runID, Status: store.StatusFailed, Error: "boom", At: at(3 * time.Minute),
			Audit:     &store.AuditEvent{Env: "team/web", Actor: "alice", Action: action, RunID: runID, Detail: string(store.StatusFailed)},
			EnvStatus: "failed"}
	}
	unchanged := func(what, runID, envID string, envStatus store.EnvStatus) {
		t.Helper()
		r, err := s.Run(ctx, runID)
		must(t, err)
		if r.Status != store.StatusRunning || r.Error != "" || !r.FinishedAt.IsZero() {
			t.Errorf("%s: the run was recorded %q (%q, finished %v)", what, r.Status, r.Error, r.FinishedAt)
		}
		events, err := s.Audit(ctx, store.AuditFilter{Env: envID})
		must(t, err)
		for _, e := range events {
			if e.RunID == runID {
				t.Errorf("%s: audit event %s appended", what, e.Action)
			}
		}
		if envStatus != "" {
			e, err := s.Environment(ctx, envID)
			must(t, err)
			equal(t, what+": environment status", e.Status, envStatus)
		}
	}

	// The run part is refused: another run holds the lock.
	must(t, acquire(t, s, holder("team/web", "run-b"), time.Minute, nil))
	startRun(t, s, "run-a", 1, at(0))
	wantLockLost(t, s.RecordOutcome(ctx, outcome("run-a", "apply")), "RecordOutcome of a run whose lock another holds")
	unchanged("outcome of a run that lost its lock", "run-a", "team/web", "provisioned")
	must(t, s.ReleaseLock(ctx, "team/web", "run-b"))

	// The audit part fails (an event without an action).
	if err := s.RecordOutcome(ctx, outcome("run-a", "")); err == nil {
		t.Error("RecordOutcome with an invalid audit event succeeded")
	}
	unchanged("outcome whose audit event failed", "run-a", "team/web", "provisioned")

	// The status part fails: the run's environment is unknown.
	must(t, s.CreateRun(ctx, store.Run{ID: "run-x", Env: "team/ghost", Kind: "apply", Status: store.StatusRunning, StartedAt: at(0)}))
	o := outcome("run-x", "apply")
	o.Audit.Env = "team/ghost"
	if err := s.RecordOutcome(ctx, o); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("RecordOutcome for an unknown environment: err = %v, want store.ErrNotFound", err)
	}
	unchanged("outcome whose environment status failed", "run-x", "team/ghost", "")

	// Whole: all three are written.
	c.set(at(4 * time.Minute))
	must(t, s.RecordOutcome(ctx, outcome("run-a", "apply")))
	r, err := s.Run(ctx, "run-a")
	must(t, err)
	if r.Status != store.StatusFailed || r.Error != "boom" || !r.FinishedAt.Equal(at(3*time.Minute)) {
		t.Errorf("run after its outcome: %q %q %v", r.Status, r.Error, r.FinishedAt)
	}
	events, err := s.Audit(ctx, store.AuditFilter{Env: "team/web"})
	must(t, err)
	if len(events) != 1 || events[0].RunID != "run-a" || events[0].Action != "apply" || events[0].Detail != string(store.StatusFailed) {
		t.Errorf("audit trail after the outcome: %+v", events)
	}
	e, err := s.Environment(ctx, "team/web")
	must(t, err)
	equal(t, "environment status after the outcome", e.Status, "failed")
	wantLockLost(t, s.RecordOutcome(ctx, outcome("run-a", "apply")), "recording an outcome twice")

	// A plan's outcome: the run alone (no audit event, status untouched).
	startRun(t, s, "run-p", 1, at(5*time.Minute))
	must(t, s.RecordOutcome(ctx, store.RunOutcome{RunID: "run-p", Status: store.StatusSucceeded, At: at(6 * time.Minute)}))
	r, err = s.Run(ctx, "run-p")
	must(t, err)
	equal(t, "plan run status", r.Status, store.StatusSucceeded)
	e, err = s.Environment(ctx, "team/web")
	must(t, err)
	equal(t, "environment status after a plan", e.Status, "failed")
}
