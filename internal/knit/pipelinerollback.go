package knit

import (
	"context"
	"fmt"

	"knit.dev/knit/internal/store"
	"knit.dev/knit/internal/view"
)

// rollbackTarget is the release verified in stage most recently before
// current ("" when none): what a rollback of the stage applies again.
func (f *PipelineFacts) rollbackTarget(stage string, current *view.StageRelease) string {
	var best *view.StageState
	for i := range f.States {
		s := &f.States[i]
		if s.Stage != stage || s.State != store.StageSucceeded || current != nil && s.Release == current.Release {
			continue
		}
		if best == nil || s.VerifiedAt.After(best.VerifiedAt) {
			best = s
		}
	}
	if best == nil {
		return ""
	}
	return best.Release
}

// StageOptions name a stage of a pipeline and who acts on it, why.
type StageOptions struct {
	Pipeline, Stage string
	Actor, Reason   string
}

// RollbackStage is the action that asks for a stage of a pipeline to run
// again the release verified there before the current one (operators;
// audited as Actor): the server's promotion controller applies it,
// through the run queue and the one door (Run), as a new revision of the
// stage's environment. A stage whose environment is not of the
// pipeline's team is refused (ErrForbidden), as is a stage busy with
// another release or paused in a rollout (ErrConflict).
type RollbackStage struct {
	k *Knit
	StageOptions
}

// NewRollbackStage is the action that rolls back the stage opts name on k.
func NewRollbackStage(k *Knit, opts StageOptions) *RollbackStage {
	return &RollbackStage{k: k, StageOptions: opts}
}

// Run asks for the rollback and returns the stage's status after.
func (a *RollbackStage) Run(ctx context.Context) (view.Stage, error) {
	k, name, stage, actor, reason := a.k, a.Pipeline, a.Stage, a.Actor, a.Reason
	f, err := k.Facts(ctx, name)
	if err != nil {
		return view.Stage{}, err
	}
	i := f.stageIndex(stage)
	if i < 0 {
		return view.Stage{}, fmt.Errorf("%w: pipeline %s has no stage %q (stages: %s)", store.ErrNotFound, name, stage, f.stageNames())
	}
	if err := f.inTeam(stage); err != nil {
		return view.Stage{}, err
	}
	cur, busy := f.Status(k.now()).Stages[i], f.busyIn(stage)
	switch {
	case f.Def.Spec.Stages[i].IsFleet():
		return view.Stage{}, fmt.Errorf("%w: %s is a fleet stage: its environments roll back by their own rollout.onFailure, and knit fleet abort %s stops its rollout",
			store.ErrConflict, stage, cur.Env)
	case busy != nil && (cur.Waiting == nil || cur.Waiting.Reason != view.WaitPaused):
		return view.Stage{}, fmt.Errorf("%w: %s applies %s now (%s): roll back once it ends", store.ErrConflict, stage, busy.Release, busy.State)
	case cur.Waiting != nil && cur.Waiting.Reason == view.WaitPaused:
		return view.Stage{}, fmt.Errorf("%w: the rollout of %s paused in %s: knit approve %s accepts it, knit rollback %s goes back",
			store.ErrConflict, cur.Waiting.Release, stage, cur.Env, cur.Env)
	case cur.RollbackTo == "":
		return view.Stage{}, fmt.Errorf("%w: %s has no release verified before the current one to roll back to", store.ErrConflict, stage)
	}
	prev := f.state(cur.RollbackTo, stage)
	next := *prev
	next.State, next.Reason, next.RunID, next.Actor, next.ChangedAt = store.StageQueued, "Rollback", "", actor, k.now()
	next.Message = fmt.Sprintf("rollback by %s", actor)
	if reason != "" {
		next.Message += ": " + reason
	}
	if err := k.SetStage(ctx, next, store.StageSucceeded, f.Envs[stage]); err != nil {
		return view.Stage{}, err
	}
	if f, err = k.Facts(ctx, name); err != nil {
		return view.Stage{}, err
	}
	return f.Status(k.now()).Stages[i], nil
}

// busyIn is the state of the release a run applies in stage now (or
// that is queued to), nil when none: one release applies at a time. A
// run applying a change of the stage's own file keeps it busy too.
func (f *PipelineFacts) busyIn(stage string) *view.StageState {
	for i := range f.States {
		s := &f.States[i]
		if s.Stage == stage && (s.State == store.StageApplying || s.State == store.StageQueued) {
			return s
		}
	}
	if c := f.Files[stage].Change; c.State == store.StageChangeApplying {
		return &view.StageState{Pipeline: f.Record.Name, Release: c.Release, Stage: stage, State: store.StageApplying, RunID: c.RunID,
			Message: "stage change " + c.ID}
	}
	return nil
}
