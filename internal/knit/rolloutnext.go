package knit

import (
	"context"
	"errors"
	"fmt"
	"time"

	"knit.dev/knit/internal/engine"
	"knit.dev/knit/internal/spec"
	"knit.dev/knit/internal/store"
)

// ErrNoRollout: the environment has no rollout in the state asked for.
var ErrNoRollout = errors.New("no rollout")

// RolloutAction is what follows a rollout's run, promote or pause: the
// next run (through the one door, as any run: judged, gated, verified),
// a pause to wait out (call Continue at Until), a pause for a person
// (knit rollout promote), or the rollout's end (Done: its state).
type RolloutAction struct {
	Run    *RunRequest
	Until  time.Time
	Paused bool
	Done   string
}

// Rollouts is the action set of rollouts by an environment's strategy:
// what follows each of their runs (Next), a pause's end (Continue), and a
// person's promote, abort and retry. Each step is recorded in the store
// before its run starts, so a crash resumes at that step and weight.
type Rollouts struct{ k *Knit }

// NewRollouts is the rollouts' actions on k.
func NewRollouts(k *Knit) *Rollouts { return &Rollouts{k: k} }

// Next records how the rollout step run req ended (res) and says what
// follows. A run that is no step, or a step of a rollout since replaced
// (a newer revision superseded it), is followed by nothing. A step that
// waits for approval is followed by the approval's apply, which carries
// the step on.
func (a *Rollouts) Next(ctx context.Context, req RunRequest, res *engine.Result) (RolloutAction, error) {
	if res == nil || res.Env == "" {
		return RolloutAction{}, nil
	}
	r, err := a.read(ctx, res.Env)
	if errors.Is(err, store.ErrNotFound) {
		return RolloutAction{}, nil
	}
	if err != nil {
		return RolloutAction{}, err
	}
	// The run is the step the rollout is at (the door may have made it
	// one after its queue took the request: the rollout names the run).
	st := r.detail.Current
	if st == nil || r.rec.RunID != res.RunID || (req.Rollout != nil && *req.Rollout != *st) {
		return RolloutAction{}, nil // no step, superseded, or followed already
	}
	if res.Awaiting() {
		return RolloutAction{}, nil
	}
	ev := StepEvidence{Step: st.Step, Phase: st.Phase, RunID: res.RunID, Weight: r.rec.Weight, Status: string(res.Status), At: a.k.now()}
	if res.Verification != nil {
		ev.Verification = res.Verification.Summary()
	}
	r.detail.Evidence = append(r.detail.Evidence, ev)
	r.detail.Current = nil
	if res.Status != store.StatusSucceeded {
		why := fmt.Sprintf("step %d (%s) run %s %s: %s", st.Step, st.Phase, res.RunID, res.Status, firstFailure(res))
		if ev.Verification != "" {
			why = fmt.Sprintf("step %d (%s) run %s: %s", st.Step, st.Phase, res.RunID, ev.Verification)
		}
		if res.Policy.Denied() { // nothing of it ran (the weight is the last run's): a person decides
			r.rec.Weight = lastWeight(r.detail.Evidence[:len(r.detail.Evidence)-1], r.rec.Weight)
			return a.end(ctx, r, RolloutFailed, why+fmt.Sprintf("; knit rollout retry %s once the policies allow it, or knit rollout abort %s", r.rec.Env, r.rec.Env))
		}
		if st.Phase == PhaseAbort || st.Phase == PhaseAborted || st.Phase == PhaseFinish || st.Phase == PhasePromote {
			return a.end(ctx, r, RolloutFailed, why)
		}
		return a.abort(ctx, r, why)
	}
	switch st.Phase {
	case PhaseAbort:
		return a.run(ctx, r, PhaseAborted)
	case PhaseAborted:
		return a.end(ctx, r, RolloutAborted, r.detail.Reason)
	case PhaseHandover:
		return a.run(ctx, r, PhasePromote)
	case PhasePromote:
		return a.run(ctx, r, PhaseFinish)
	case PhaseFinish:
		return a.end(ctx, r, RolloutSucceeded, "")
	case PhaseStep:
		r.rec.Step++
	}
	return a.advance(ctx, r)
}

// advance goes on from r's step: its run, its pause, or the promotion
// once every step is done.
func (a *Rollouts) advance(ctx context.Context, r *rollout) (RolloutAction, error) {
	_, next, err := a.specs(ctx, r)
	if err != nil {
		return RolloutAction{}, err
	}
	steps := rolloutSteps(next)
	if r.rec.Step >= len(steps) {
		// Replacing a stable instance restarts it: it must serve nothing
		// then. A canary's last weight of 100 sees to it; below that, a
		// run of its own hands all traffic to the canary first.
		if next.Spec.Strategy().BlueGreen == nil && r.rec.Weight < 100 {
			return a.run(ctx, r, PhaseHandover)
		}
		return a.run(ctx, r, PhasePromote)
	}
	s := steps[r.rec.Step]
	if s.Pause == nil {
		return a.run(ctx, r, PhaseStep)
	}
	if s.Pause.Duration == "" {
		r.rec.State = RolloutPaused
		if err := a.save(ctx, r, &store.AuditEvent{Action: auditRollout,
			Detail: fmt.Sprintf("rollout %s paused at step %d, weight %d: knit rollout promote goes on", r.rec.ID, r.rec.Step, r.rec.Weight)}); err != nil {
			return RolloutAction{}, err
		}
		return RolloutAction{Paused: true}, nil
	}
	if r.detail.PauseUntil.IsZero() {
		d, err := time.ParseDuration(s.Pause.Duration)
		if err != nil {
			return RolloutAction{}, err
		}
		r.detail.PauseUntil = a.k.now().Add(d)
		if err := a.save(ctx, r, &store.AuditEvent{Action: auditRollout,
			Detail: fmt.Sprintf("rollout %s pauses at step %d, weight %d, until %s", r.rec.ID, r.rec.Step, r.rec.Weight, r.detail.PauseUntil.Format(time.RFC3339))}); err != nil {
			return RolloutAction{}, err
		}
	}
	return RolloutAction{Until: r.detail.PauseUntil}, nil
}

// Continue goes on with env's rollout once its pause with a duration is
// over (before: the same pause again), or carries on a rollout a crash
// left between steps.
func (a *Rollouts) Continue(ctx context.Context, env string) (RolloutAction, error) {
	r, err := a.active(ctx, env)
	if err != nil || r == nil {
		return RolloutAction{}, err
	}
	if r.detail.Current != nil || r.rec.State == RolloutPaused {
		return RolloutAction{Paused: r.rec.State == RolloutPaused}, nil
	}
	if !r.detail.PauseUntil.IsZero() {
		if a.k.now().Before(r.detail.PauseUntil) {
			return RolloutAction{Until: r.detail.PauseUntil}, nil
		}
		r.detail.PauseUntil = time.Time{}
		r.rec.Step++
	}
	if r.rec.State == RolloutAborting {
		return a.run(ctx, r, PhaseAbort)
	}
	return a.advance(ctx, r)
}

// abort turns r back: weight 0, then the stable revision.
func (a *Rollouts) abort(ctx context.Context, r *rollout, why string) (RolloutAction, error) {
	r.rec.State, r.detail.Reason, r.detail.PauseUntil = RolloutAborting, why, time.Time{}
	return a.run(ctx, r, PhaseAbort)
}

// end records r's end.
func (a *Rollouts) end(ctx context.Context, r *rollout, state, why string) (RolloutAction, error) {
	r.rec.State, r.rec.RunID = state, ""
	if why != "" {
		r.detail.Reason = why
	}
	action := auditRollout
	switch state {
	case RolloutAborted:
		action = auditAbort
	case RolloutSucceeded:
		action = auditPromoted
	}
	detail := fmt.Sprintf("rollout %s %s", r.rec.ID, state)
	if r.detail.Reason != "" {
		detail += ": " + r.detail.Reason
	}
	if err := a.save(ctx, r, &store.AuditEvent{Action: action, Detail: detail}); err != nil {
		return RolloutAction{}, err
	}
	return RolloutAction{Done: state}, nil
}

// run records r's next run, of phase, before it starts (so a crash
// resumes it, at its weight), and returns it.
func (a *Rollouts) run(ctx context.Context, r *rollout, phase string) (RolloutAction, error) {
	stable, next, err := a.specs(ctx, r)
	if err != nil {
		return RolloutAction{}, err
	}
	var env *spec.Environment
	steps := rolloutSteps(next)
	blueGreen := next.Spec.Strategy().BlueGreen != nil
	switch {
	case blueGreen:
		env, r.rec.Weight, err = blueGreenRun(phase, stable, next)
	default:
		env, err = canaryRun(r, phase, stable, next, steps)
	}
	if err != nil {
		return RolloutAction{}, err
	}
	step := &RolloutStep{ID: r.rec.ID, Phase: phase, Step: r.rec.Step}
	r.rec.RunID, r.detail.Current = NewRunID(), step
	d := r.detail
	req := RunRequest{Kind: engine.KindApply, Env: env, Rollout: step, RunID: r.rec.RunID, Actor: d.Actor, Source: SourceRollout,
		AutoApprove: d.AutoApprove, Origin: d.Origin, Root: d.Root, Commit: d.Commit, Author: d.Author, Message: d.Message, Tree: d.Tree,
		Reason: fmt.Sprintf("rollout %s: %s", r.rec.ID, describeStep(phase, r.rec.Step, r.rec.Weight, len(steps), blueGreen))}
	if phase == PhaseAborted {
		req.Origin, req.Root, req.Commit, req.Author, req.Message, req.Tree = "", "", "", "", "", ""
	}
	if err := a.save(ctx, r, &store.AuditEvent{Action: auditRollout, RunID: req.RunID, Detail: req.Reason}); err != nil {
		return RolloutAction{}, err
	}
	return RolloutAction{Run: &req}, nil
}

// canaryRun is the environment of a canary rollout's run of phase; it
// sets r's weight to the run's.
func canaryRun(r *rollout, phase string, stable, next *spec.Environment, steps []spec.CanaryStep) (env *spec.Environment, err error) {
	switch phase {
	case PhaseUp, PhaseAbort:
		r.rec.Weight = 0
		env, err = canaryForm(stable, next, false, 0, nil)
	case PhaseStep:
		s := steps[r.rec.Step]
		if s.SetWeight != nil {
			r.rec.Weight = *s.SetWeight
		}
		env, err = canaryForm(stable, next, false, r.rec.Weight, s.Analysis)
	case PhaseHandover:
		r.rec.Weight = 100
		env, err = canaryForm(stable, next, false, 100, nil)
	case PhasePromote:
		r.rec.Weight = 0
		env, err = canaryForm(stable, next, true, 0, nil)
	case PhaseFinish:
		env, err = stableForm(next)
	case PhaseAborted:
		env, err = stableForm(stable)
	}
	return env, err
}

// describeStep says what a run of a rollout does.
func describeStep(phase string, step, weight, steps int, blueGreen bool) string {
	if blueGreen {
		return describeColors(phase)
	}
	switch phase {
	case PhaseUp:
		return "the canary comes up at weight 0"
	case PhaseStep:
		return fmt.Sprintf("step %d of %d at weight %d", step+1, steps, weight)
	case PhaseHandover:
		return "the canary takes all traffic (weight 100) before the stable instances are replaced"
	case PhasePromote:
		return "the stable instances take the new revision, weight 0"
	case PhaseFinish:
		return "the new revision, the canary destroyed"
	case PhaseAbort:
		return "aborted: weight 0"
	}
	return "aborted: the stable revision, the canary destroyed"
}

// lastWeight is the weight the last run of evidence that succeeded left
// (none: def).
func lastWeight(evidence []StepEvidence, def int) int {
	for i := len(evidence) - 1; i >= 0; i-- {
		if evidence[i].Status == string(store.StatusSucceeded) {
			return evidence[i].Weight
		}
	}
	return def
}
