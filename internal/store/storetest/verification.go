package storetest

import (
	"errors"
	"testing"
	"time"

	"knit.dev/knit/internal/store"
)

// testVerification: a run's outcome records how its revision's
// verification ended, LastGoodRevision finds the newest good revision
// below a number, and RecordVerification (a person accepting a paused
// revision) writes the revision, the environment's status and the audit
// event together, refusing a revision someone decided first.
func testVerification(t *testing.T, s store.Store) {
	ctx := t.Context()
	_, err := s.LastGoodRevision(ctx, "team/web", 0)
	wantNotFound(t, err, "the good revision of an unknown environment")
	for i, spec := range []string{"a", "b", "c"} {
		_, err := s.PutRevision(ctx, env("team/web"), rev(spec, at(time.Duration(i)*time.Minute)))
		must(t, err)
	}
	_, err = s.LastGoodRevision(ctx, "team/web", 0)
	wantNotFound(t, err, "the good revision of an environment never verified")

	// Revision 1 verified, revision 2 failed: a rollback from 3 goes to 1.
	finish := func(runID string, n int, verification string) {
		t.Helper()
		must(t, s.CreateRun(ctx, store.Run{ID: runID, Env: "team/web", Kind: store.KindApply, Revision: n, Status: store.StatusRunning, StartedAt: at(0)}))
		must(t, s.RecordOutcome(ctx, store.RunOutcome{RunID: runID, Status: store.StatusSucceeded, At: at(time.Minute), Verification: verification}))
	}
	finish("run-1", 1, store.VerificationSuccessful)
	finish("run-2", 2, store.VerificationFailed)
	r, err := s.Revision(ctx, "team/web", 2)
	must(t, err)
	equal(t, "revision 2's verification", r.Verification, store.VerificationFailed)
	if r.Good() {
		t.Error("a failed revision is good")
	}
	good, err := s.LastGoodRevision(ctx, "team/web", 3)
	must(t, err)
	equal(t, "last good revision below 3", good.Number, 1)
	equal(t, "its spec", string(good.Spec), `{"spec":"a"}`)
	_, err = s.LastGoodRevision(ctx, "team/web", 1)
	wantNotFound(t, err, "a good revision below the first")

	// A person accepts revision 2: it is good, the environment applied.
	must(t, s.SetEnvironmentStatus(ctx, "team/web", store.EnvPaused))
	accept := store.VerificationDecision{Env: "team/web", Revision: 2, Verification: store.VerificationAccepted,
		From: store.VerificationFailed, EnvStatus: store.EnvApplied,
		Audit: &store.AuditEvent{Env: "team/web", Actor: "alice", Action: "rollout-accepted", Revision: 2}}
	must(t, s.RecordVerification(ctx, accept))
	good, err = s.LastGoodRevision(ctx, "team/web", 0)
	must(t, err)
	equal(t, "last good revision after the acceptance", good.Number, 2)
	e, err := s.Environment(ctx, "team/web")
	must(t, err)
	equal(t, "environment status after the acceptance", e.Status, store.EnvApplied)
	events, err := s.Audit(ctx, store.AuditFilter{Env: "team/web", Actor: "alice"})
	must(t, err)
	if len(events) != 1 || events[0].Action != "rollout-accepted" {
		t.Errorf("audit after the acceptance: %+v", events)
	}

	// Deciding again is a conflict, and writes nothing.
	must(t, s.SetEnvironmentStatus(ctx, "team/web", store.EnvPaused))
	if err := s.RecordVerification(ctx, accept); !errors.Is(err, store.ErrConflict) {
		t.Errorf("accepting twice: err = %v, want store.ErrConflict", err)
	}
	e, err = s.Environment(ctx, "team/web")
	must(t, err)
	equal(t, "environment status after a refused decision", e.Status, store.EnvPaused)
	accept.Revision, accept.From = 9, ""
	wantNotFound(t, s.RecordVerification(ctx, accept), "deciding an unknown revision")
}
