package knit

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"knit.dev/knit/internal/store"
)

// ErrRolloutNotPaused: a promote of a rollout that does not wait for one.
var ErrRolloutNotPaused = fmt.Errorf("%w: the rollout is not paused", ErrNotPaused)

// Status is env's newest rollout as ctx's caller may see it
// (ErrNoRollout when it has none).
func (a *Rollouts) Status(ctx context.Context, ref string) (RolloutView, error) {
	e, err := a.k.resolveEnv(ctx, ref)
	if err != nil {
		return RolloutView{}, err
	}
	r, err := a.read(ctx, e.ID)
	if errors.Is(err, store.ErrNotFound) {
		return RolloutView{}, fmt.Errorf("%w: %s has had none (a canary strategy rolls out changes of an applied environment)", ErrNoRollout, e.ID)
	}
	if err != nil {
		return RolloutView{}, err
	}
	v := RolloutView{Env: e.ID, ID: r.rec.ID, State: r.rec.State, Step: r.rec.Step, Weight: r.rec.Weight, RunID: r.rec.RunID,
		Stable: r.detail.Stable, Reason: r.detail.Reason, Evidence: r.detail.Evidence}
	if _, next, err := a.specs(ctx, r); err == nil {
		v.Strategy, v.Plan = strategyName(next), planOf(next)
		v.Steps = len(v.Plan)
	}
	return v, nil
}

// Promote goes on with ref's rollout paused for a person, as actor: the
// step after the pause is recorded and its run returned. A rollout that is
// not paused is refused (ErrRolloutNotPaused); of two promotes at once,
// one goes on and the other is refused (store.ErrConflict).
func (a *Rollouts) Promote(ctx context.Context, ref, actor, reason string) (RolloutAction, error) {
	r, err := a.controlled(ctx, ref, underWay...)
	if err != nil {
		return RolloutAction{}, err
	}
	if r.rec.State != RolloutPaused {
		return RolloutAction{}, fmt.Errorf("%w: %s's rollout %s is %s at step %d", ErrRolloutNotPaused, r.rec.Env, r.rec.ID, r.rec.State, r.rec.Step)
	}
	r.rec.State = RolloutRunning
	r.rec.Step++
	if err := a.save(ctx, r, &store.AuditEvent{Actor: actor, Action: auditRollout, Reason: reason,
		Detail: fmt.Sprintf("rollout %s promoted by %s past its pause at step %d", r.rec.ID, actor, r.rec.Step-1)}); err != nil {
		return RolloutAction{}, err
	}
	return byPerson(a.advance(ctx, r))(actor)
}

// Abort turns ref's rollout back as actor: weight 0, the canary destroyed,
// the environment on its stable revision. The returned run starts it. A
// rollout under way or failed (its canary may still be up) is aborted.
func (a *Rollouts) Abort(ctx context.Context, ref, actor, reason string) (RolloutAction, error) {
	r, err := a.controlled(ctx, ref, RolloutRunning, RolloutPaused, RolloutAborting, RolloutFailed)
	if err != nil {
		return RolloutAction{}, err
	}
	if r.rec.State == RolloutAborting {
		return RolloutAction{}, fmt.Errorf("%w: %s's rollout %s is aborting already", store.ErrConflict, r.rec.Env, r.rec.ID)
	}
	why := fmt.Sprintf("aborted by %s at step %d, weight %d", actor, r.rec.Step, r.rec.Weight)
	if reason != "" {
		why += ": " + reason
	}
	if err := a.save(ctx, r, &store.AuditEvent{Actor: actor, Action: auditRollout, Reason: reason,
		Detail: fmt.Sprintf("rollout %s %s", r.rec.ID, why)}); err != nil {
		return RolloutAction{}, err
	}
	return byPerson(a.abort(ctx, r, why))(actor)
}

// controlled is ref's rollout in one of states, for a person's control:
// the environment resolved as ctx's caller sees it, the caller an
// operator of its team.
func (a *Rollouts) controlled(ctx context.Context, ref string, states ...string) (*rollout, error) {
	e, err := a.k.resolveEnv(ctx, ref)
	if err != nil {
		return nil, err
	}
	if err := authorizeRun(ctx, e.ID, RunRequest{}); err != nil {
		return nil, err
	}
	r, err := a.read(ctx, e.ID)
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		return nil, err
	}
	if err == nil && slices.Contains(states, r.rec.State) {
		return r, nil
	}
	return nil, fmt.Errorf("%w under way in %s (knit rollout status %s)", ErrNoRollout, e.ID, e.ID)
}

// under way are the states of a rollout that is not over.
var underWay = []string{RolloutRunning, RolloutPaused, RolloutAborting}

// Resume is what carries on each rollout a crash or a stop left between
// steps, by environment: a rollout at a run whose record is gone or
// ended (the crash came before its run started, or before what follows
// it was decided) runs that step again, at the same weight; one whose run
// was interrupted is left to the run's resume, which carries the step on;
// one between steps goes on (Continue). Paused rollouts wait.
func (a *Rollouts) Resume(ctx context.Context) (map[string]RolloutAction, error) {
	recs, err := a.k.store.Rollouts(ctx)
	if err != nil {
		return nil, err
	}
	out := map[string]RolloutAction{}
	for _, rec := range recs {
		r, err := a.active(ctx, rec.Env)
		if err != nil {
			return nil, err
		}
		if r == nil || r.rec.State == RolloutPaused {
			continue
		}
		if r.detail.Current == nil {
			if out[rec.Env], err = a.Continue(ctx, rec.Env); err != nil {
				return nil, err
			}
			continue
		}
		run, err := a.k.store.Run(ctx, r.rec.RunID)
		switch {
		case err == nil && (run.Status == store.StatusRunning || run.Status == store.StatusInterrupted):
			continue // interrupted: the queue resumes it
		case err != nil && !errors.Is(err, store.ErrNotFound):
			return nil, err
		}
		if out[rec.Env], err = a.run(ctx, r, r.detail.Current.Phase); err != nil {
			return nil, err
		}
	}
	return out, nil
}
