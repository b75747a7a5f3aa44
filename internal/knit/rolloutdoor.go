package knit

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"

	"knit.dev/knit/internal/engine"
	"knit.dev/knit/internal/spec"
	"knit.dev/knit/internal/store"
)

// strategy is the door's rule for an environment with a rollout
// strategy: it returns the environment req runs. A step of a rollout runs
// its own environment; an apply of the environment's applied revision
// while a rollout is at a run (a resume after a crash, the apply of an
// approval) carries that step on; an apply that changes a canary's
// marked components of an environment already applied starts a rollout
// (superseding one under way: the new one starts again from the stable
// revision) and runs its first step; anything else runs the stable form
// (no second instance up).
func (a *Run) strategy(ctx context.Context, req *RunRequest, env *spec.Environment) (*spec.Environment, error) {
	if req.Rollout != nil || req.Kind != engine.KindApply {
		if req.Rollout != nil {
			return env, NewRollouts(a.k).named(ctx, env.ID(), *req.Rollout, req.RunID)
		}
		return stableForm(env)
	}
	active, err := NewRollouts(a.k).active(ctx, env.ID())
	if err != nil {
		return nil, err
	}
	if active != nil && active.detail.Current != nil && req.Env == nil {
		step := *active.detail.Current
		req.Rollout = &step
		if req.RunID == "" {
			req.RunID = NewRunID()
		}
		active.rec.RunID = req.RunID // what follows this run follows the step
		return env, NewRollouts(a.k).save(ctx, active, nil)
	}
	if env.Spec.Strategy() == nil {
		return stableForm(env)
	}
	rec, err := a.k.store.Environment(ctx, env.ID())
	if errors.Is(err, store.ErrNotFound) || (err == nil && rec.AppliedRevision == 0) {
		return stableForm(env) // a first apply is plain
	}
	if err != nil {
		return nil, err
	}
	stableRev := rec.AppliedRevision
	if active != nil {
		stableRev = active.detail.Stable
	}
	rev, err := a.k.store.Revision(ctx, env.ID(), stableRev)
	if err != nil {
		return nil, fmt.Errorf("%s revision %d: %w", env.ID(), stableRev, err)
	}
	stable, err := spec.FromJSON(rev.Spec, rev.Source, rev.Root)
	if err != nil {
		return nil, err
	}
	if active == nil && (stable.Spec.Strategy() == nil || !markedChanged(stable, env)) {
		return stableForm(env)
	}
	return a.startRollout(ctx, req, env, stableRev, active)
}

// startRollout records a new rollout of env from revision stable (over
// active, which it supersedes) and makes req its first run.
func (a *Run) startRollout(ctx context.Context, req *RunRequest, env *spec.Environment, stable int, active *rollout) (*spec.Environment, error) {
	body, err := json.Marshal(env)
	if err != nil {
		return nil, err
	}
	r := &rollout{rec: store.Rollout{Env: env.ID(), ID: "ro-" + NewRunID(), State: RolloutRunning},
		detail: rolloutDetail{Stable: stable, Next: body, Origin: req.Origin, Root: req.Root, Commit: req.Commit, Author: req.Author,
			Message: req.Message, Tree: req.Tree, Actor: req.Actor, AutoApprove: req.AutoApprove}}
	if r.detail.Origin == "" {
		r.detail.Origin = env.File
	}
	if r.detail.Root == "" {
		r.detail.Root = env.Dir
	}
	why := fmt.Sprintf("rollout %s of %s from revision %d by its canary strategy", r.rec.ID, env.ID(), stable)
	if prev, err := NewRollouts(a.k).read(ctx, env.ID()); err == nil {
		r.rec.Version = prev.rec.Version
	} else if !errors.Is(err, store.ErrNotFound) {
		return nil, err
	}
	if active != nil {
		why += fmt.Sprintf(", superseding %s (at step %d, weight %d)", active.rec.ID, active.rec.Step, active.rec.Weight)
	}
	if err := NewRollouts(a.k).save(ctx, r, &store.AuditEvent{Action: auditStart, Detail: why}); err != nil {
		return nil, err
	}
	act, err := NewRollouts(a.k).run(ctx, r, PhaseUp)
	if err != nil {
		return nil, err
	}
	req.Rollout, req.Source = act.Run.Rollout, SourceRollout
	if req.RunID == "" {
		req.RunID = act.Run.RunID
	} else { // a queue handed the ID out: the rollout names it
		r.rec.RunID = req.RunID
		if err := NewRollouts(a.k).save(ctx, r, nil); err != nil {
			return nil, err
		}
	}
	if req.Reason == "" {
		req.Reason = act.Run.Reason
	}
	return act.Run.Env, nil
}

// markedChanged reports whether next changes a component stable's
// strategy marks (canary, blueGreen), or marks one more or fewer.
func markedChanged(stable, next *spec.Environment) bool {
	marked := func(e *spec.Environment) map[string]*spec.Component {
		m := map[string]*spec.Component{}
		for _, c := range e.Spec.Components {
			if e.Marked(c) {
				m[c.Name] = c
			}
		}
		return m
	}
	return !reflect.DeepEqual(marked(stable), marked(next))
}

// named records runID as the run of env's rollout at step, when a queue
// handed the step's run another ID than the one the rollout recorded
// (what follows the run follows the step).
func (a *Rollouts) named(ctx context.Context, env string, step RolloutStep, runID string) error {
	r, err := a.active(ctx, env)
	if err != nil || r == nil || r.detail.Current == nil || *r.detail.Current != step || runID == "" || r.rec.RunID == runID {
		return err
	}
	r.rec.RunID = runID
	return a.save(ctx, r, nil)
}
