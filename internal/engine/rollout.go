package engine

import (
	"errors"
	"fmt"

	"knit.dev/knit/internal/health"
	"knit.dev/knit/internal/spec"
	"knit.dev/knit/internal/store"
)

// Rollout is what follows an apply whose verification did not succeed
// (Result.Rollout): the environment's spec.rollout decides it.
type Rollout string

// Rollouts.
const (
	// RolloutNone: the run failed, and that is all (onFailure: none, or a
	// rollback's own verification failed: a rollback never rolls back).
	RolloutNone Rollout = ""
	// RolloutRollback: the caller starts a rollback run
	// (onFailure: rollback and a Failed verification).
	RolloutRollback Rollout = "rollback"
	// RolloutPaused: the environment waits for a person (EnvPaused):
	// knit approve accepts the revision, knit rollback goes back. An
	// Inconclusive verification always pauses.
	RolloutPaused Rollout = "paused"
)

// EnvPaused is the store's word for a paused rollout.
const EnvPaused = store.EnvPaused

// rollout decides what follows the run's end with err: only an apply or
// a rollback whose verification did not succeed is followed by anything.
func (v *verification) rollout(err error) Rollout {
	var verr *VerificationError
	if !v.s.applies() || !errors.As(err, &verr) {
		return RolloutNone
	}
	switch {
	case verr.Report.Verdict == health.Inconclusive:
		return RolloutPaused // nobody could tell: a person decides
	case v.s.env.Spec.OnFailure() == spec.PauseOnFailure:
		return RolloutPaused
	case v.s.env.Spec.OnFailure() == spec.RollbackOnFailure && v.s.kind == KindApply:
		return RolloutRollback
	}
	return RolloutNone
}

// verification is what the run's revision keeps of its verification:
// Successful for an apply or rollback that succeeded (with or without
// checks), the verdict of one whose checks did not succeed, "" otherwise.
func (v *verification) verdict(status store.RunStatus, err error) string {
	if !v.s.applies() {
		return ""
	}
	var verr *VerificationError
	if errors.As(err, &verr) {
		return string(verr.Report.Verdict)
	}
	if status == store.StatusSucceeded {
		return store.VerificationSuccessful
	}
	return ""
}

// RollbackReason is why a rollback of res's environment starts: the
// revision that failed and the check that failed it, with what it saw.
func RollbackReason(res *Result) string {
	why := res.Error
	if res.Verification != nil {
		why = res.Verification.Summary()
	}
	return fmt.Sprintf("revision %d failed verification (run %s): %s", res.Revision, res.RunID, why)
}
