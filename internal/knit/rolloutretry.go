package knit

import (
	"context"
	"fmt"
	"time"

	"knit.dev/knit/internal/engine"
	"knit.dev/knit/internal/store"
)

// ErrRolloutNotRetryable: a retry of a rollout that neither failed nor
// aborted.
var ErrRolloutNotRetryable = fmt.Errorf("%w: only a failed or aborted rollout is retried", store.ErrConflict)

// Retry runs ref's rollout again as actor, once it stopped short:
//   - failed (a run of it failed, or a policy denied one: nothing of that
//     run changed): the run that failed again, at the same step and weight;
//   - aborted: the rollout again from its first step, of the same
//     revision, from the same stable revision (a new rollout ID).
//
// Anything else is refused (ErrRolloutNotRetryable): a rollout under way
// goes on by itself or by promote, a succeeded one is over. The returned
// run goes through the one door like any run (judged by policy, gated).
func (a *Rollouts) Retry(ctx context.Context, ref, actor, reason string) (RolloutAction, error) {
	r, err := a.controlled(ctx, ref, RolloutFailed, RolloutAborted, RolloutRunning, RolloutPaused, RolloutAborting, RolloutSucceeded)
	if err != nil {
		return RolloutAction{}, err
	}
	switch r.rec.State {
	case RolloutFailed:
		return a.retryFailed(ctx, r, actor, reason)
	case RolloutAborted:
		return a.restart(ctx, r, actor, reason)
	}
	return RolloutAction{}, fmt.Errorf("%w: %s's rollout %s is %s at step %d (knit rollout status %s)", ErrRolloutNotRetryable, r.rec.Env, r.rec.ID, r.rec.State, r.rec.Step, r.rec.Env)
}

// retryFailed runs the failed run of r again.
func (a *Rollouts) retryFailed(ctx context.Context, r *rollout, actor, reason string) (RolloutAction, error) {
	phase := PhaseUp
	if n := len(r.detail.Evidence); n > 0 {
		phase = r.detail.Evidence[n-1].Phase
	}
	r.rec.State = RolloutRunning
	if phase == PhaseAbort || phase == PhaseAborted {
		r.rec.State = RolloutAborting
	}
	if err := a.save(ctx, r, &store.AuditEvent{Actor: actor, Action: auditRollout, Reason: reason,
		Detail: fmt.Sprintf("rollout %s retried by %s: its %s run at step %d, weight %d, again", r.rec.ID, actor, phase, r.rec.Step, r.rec.Weight)}); err != nil {
		return RolloutAction{}, err
	}
	return byPerson(a.run(ctx, r, phase))(actor)
}

// restart starts aborted r again from its first step: a new rollout of
// the same revision from the same stable revision.
func (a *Rollouts) restart(ctx context.Context, r *rollout, actor, reason string) (RolloutAction, error) {
	if err := a.unchangedSince(ctx, r); err != nil {
		return RolloutAction{}, err
	}
	old := r.rec.ID
	r.rec.ID, r.rec.State, r.rec.Step, r.rec.Weight, r.rec.RunID = "ro-"+NewRunID(), RolloutRunning, 0, 0, ""
	r.detail.Evidence, r.detail.Reason, r.detail.PauseUntil, r.detail.Current = nil, "", time.Time{}, nil
	if err := a.save(ctx, r, &store.AuditEvent{Actor: actor, Action: auditStart, Reason: reason,
		Detail: fmt.Sprintf("rollout %s of %s from revision %d, retried by %s after %s aborted: from step 1 again", r.rec.ID, r.rec.Env, r.detail.Stable, actor, old)}); err != nil {
		return RolloutAction{}, err
	}
	return byPerson(a.run(ctx, r, PhaseUp))(actor)
}

// unchangedSince refuses a restart of aborted r once another run changed
// the environment after the abort's last run (an apply of a newer file,
// a rollback): retrying would roll the older revision out over it.
func (a *Rollouts) unchangedSince(ctx context.Context, r *rollout) error {
	last := ""
	if n := len(r.detail.Evidence); n > 0 {
		last = r.detail.Evidence[n-1].RunID
	}
	runs, err := a.k.store.Runs(ctx, r.rec.Env, store.RunFilter{Limit: 50})
	if err != nil {
		return err
	}
	for _, run := range runs {
		if run.Kind == engine.KindPlan || run.Kind == engine.KindDrift || run.Status == store.StatusRefused {
			continue // changed nothing (a drift reconcile is the applied revision again)
		}
		if run.ID != last {
			return fmt.Errorf("%w: %s changed after rollout %s aborted (run %s, %s): apply the file again to roll it out", ErrRolloutNotRetryable, r.rec.Env, r.rec.ID, run.ID, run.Kind)
		}
		return nil
	}
	return nil
}

// byPerson makes the run a person's action leads to that person's: the
// policies judge it with input.run.actor the person.
func byPerson(act RolloutAction, err error) func(actor string) (RolloutAction, error) {
	return func(actor string) (RolloutAction, error) {
		if err == nil && act.Run != nil && actor != "" {
			act.Run.Actor = actor
		}
		return act, err
	}
}
