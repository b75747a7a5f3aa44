package kubecontroller

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"

	"knit.dev/knit/internal/engine"
	"knit.dev/knit/internal/knit"
)

// rollBack runs the rollback that follows an apply whose verification
// failed when the environment's rollout says so (rollout.onFailure:
// rollback), as knit apply and knit serve do: through the library's
// rollback (knit.After), which re-applies the last revision that
// verified. st, the status fromResult made of the failed apply, then
// says so: Stalled RolledBack, naming the failed check and the revision
// gone back to; the object's generation is not applied again until it
// changes (the spec must be fixed). A rollback that waits for approval
// (a destroy of a component the failed revision added) or fails is
// recorded as any run. It returns whether a rollback ran.
func (r *reconciler) rollBack(ctx context.Context, e *Environment, res *engine.Result, st *EnvironmentStatus) bool {
	req := knit.After(knit.RunRequest{}, res, r.actor(e)).Rollback
	if req == nil || ctx.Err() != nil {
		return false
	}
	failed := engine.RollbackReason(res)
	target := "the last revision that verified"
	if good, err := knit.NewRecords(r.knit).RollbackTarget(ctx, res.Env, 0); err == nil {
		target = fmt.Sprintf("revision %d", good.Number)
	}
	rb, err := knit.NewRun(r.knit, *req).Run(ctx)
	r.logRun("rollback", e, res.Env, rb, err)
	if rb == nil {
		msg := fmt.Sprintf("generation %d: %s; not rolled back: %v", e.Generation, failed, err)
		setCondition(&st.Conditions, e.Generation, CondStalled, true, string(engine.ReasonVerificationFailed), msg)
		setCondition(&st.Conditions, e.Generation, CondReady, false, string(engine.ReasonVerificationFailed), msg)
		return true
	}
	fromResult(st, e.Generation, rb, err)
	if !succeeded(rb) {
		return true
	}
	msg := fmt.Sprintf("generation %d: %s; run %s rolled %s back to %s (now revision %d; rollout.onFailure: rollback): fix the spec, a new generation is applied",
		e.Generation, failed, rb.RunID, rb.Env, target, rb.Revision)
	setCondition(&st.Conditions, e.Generation, CondStalled, true, ReasonRolledBack, msg)
	setCondition(&st.Conditions, e.Generation, CondReady, false, ReasonRolledBack, msg)
	return true
}

// rolledBack reports whether the observed generation was rolled back:
// it is not applied again until the object changes.
func rolledBack(st *EnvironmentStatus, gen int64) bool {
	c := meta.FindStatusCondition(st.Conditions, CondStalled)
	return c != nil && c.Status == "True" && c.Reason == ReasonRolledBack && st.ObservedGeneration == gen
}
