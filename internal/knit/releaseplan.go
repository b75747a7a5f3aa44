package knit

import (
	"context"
	"errors"
	"fmt"

	"knit.dev/knit/internal/engine"
	"knit.dev/knit/internal/progress"
	"knit.dev/knit/internal/store"
	"knit.dev/knit/internal/view"
)

// StageRuns builds the run that would apply a release of a pipeline to
// one of its stages, as the server's promotion controller queues it
// (promotion.Controller: the library cannot read a commit's tree).
type StageRuns interface {
	StageRun(ctx context.Context, pipeline, release, stage string) (RunRequest, error)
}

// ReleasePlanOptions ask what Release of Pipeline would change in each
// stage (Stages limits them; empty: all), as Actor; Runs builds each
// stage's run.
type ReleasePlanOptions struct {
	Pipeline, Release string
	Stages            []string
	Actor             string
	Runs              StageRuns
}

// ReleasePlan is the action that plans a release in every stage of its
// pipeline against what each stage's environment has applied, applying
// nothing and recording no revision. Each stage's plan is the run the
// promotion controller would queue, planned in copies of the work dirs
// (engine.Options.Preview) and judged by the policies its apply would be
// (the release's commit's tree, the server's, the environment's own):
// the release is merged code, so it runs as an apply would. A pipeline
// of a team the caller may not see is ErrForbidden; a stage whose
// environment another run holds is reported locked, not waited for.
type ReleasePlan struct {
	k *Knit
	ReleasePlanOptions
}

// NewReleasePlan is the action that plans as opts say on k.
func NewReleasePlan(k *Knit, opts ReleasePlanOptions) *ReleasePlan {
	return &ReleasePlan{k: k, ReleasePlanOptions: opts}
}

// Run plans the release in each stage, one stage after another.
func (a *ReleasePlan) Run(ctx context.Context) (view.ReleasePlan, error) {
	if a.Runs == nil {
		return view.ReleasePlan{}, fmt.Errorf("%w: no pipelines are followed here: knit pipeline plan asks the server that follows them (knit serve --pipeline FILE; --server URL)", store.ErrNotFound)
	}
	f, err := a.k.Facts(ctx, a.Pipeline)
	if err != nil {
		return view.ReleasePlan{}, err
	}
	r := f.release(a.Release)
	if r == nil {
		return view.ReleasePlan{}, fmt.Errorf("%w: pipeline %s has no release %q (knit releases %s lists them)", store.ErrNotFound, a.Pipeline, a.Release, a.Pipeline)
	}
	for _, s := range a.Stages {
		if f.stageIndex(s) < 0 {
			return view.ReleasePlan{}, fmt.Errorf("%w: pipeline %s has no stage %q (stages: %s)", store.ErrNotFound, a.Pipeline, s, f.stageNames())
		}
	}
	out := view.ReleasePlan{Pipeline: a.Pipeline, Release: r.ID, Commit: r.Commit, Stages: []view.StagePlan{}}
	status := f.Status(a.k.now())
	for i, st := range f.Def.Spec.Stages {
		if !a.wants(st.Name) {
			continue
		}
		sp, err := a.stage(ctx, st.Name, f.Envs[st.Name])
		if err != nil {
			return out, err
		}
		if cur := status.Stages[i].Current; cur != nil {
			sp.Current = cur.Release
		}
		out.Stages = append(out.Stages, sp)
	}
	return out, nil
}

func (a *ReleasePlan) wants(stage string) bool {
	if len(a.Stages) == 0 {
		return true
	}
	for _, s := range a.Stages {
		if s == stage {
			return true
		}
	}
	return false
}

// stage plans the release in one stage. What stops only this stage's
// plan (its file does not load, a run holds the lock, a tool fails) is
// the stage's Status; an error is the store's or the context's.
func (a *ReleasePlan) stage(ctx context.Context, stage, envID string) (view.StagePlan, error) {
	k := a.k
	sp := view.StagePlan{Stage: stage, Env: envID, Components: []view.PreviewComponent{}, Decisions: []progress.Decision{}}
	req, err := a.Runs.StageRun(ctx, a.Pipeline, a.Release, stage)
	if err != nil {
		if errors.Is(err, store.ErrNotFound) || errors.Is(err, ErrForbidden) || ctx.Err() != nil {
			return sp, err
		}
		sp.Status, sp.Error = view.StagePlanFailed, err.Error()
		return sp, nil
	}
	judge, err := k.judge(ctx, req.Env, req)
	if err != nil {
		return sp, err
	}
	res, err := k.engine.Do(ctx, engine.KindPlan, req.Env, engine.Options{Preview: true, Judge: judge,
		Parallelism: k.cfg.Parallelism, Actor: firstNonEmpty(a.Actor, req.Actor), Source: store.SourcePreview,
		Root: req.Root, Origin: req.Origin, Commit: req.Commit, Author: req.Author, Message: req.Message,
		Reason: fmt.Sprintf("plan of release %s of pipeline %s in stage %s (knit pipeline plan)", a.Release, a.Pipeline, stage)})
	switch {
	case errors.Is(err, engine.ErrLocked):
		sp.Status, sp.Error = view.StagePlanLocked, fmt.Sprintf("a run of %s holds its lock: plan again when it ends", envID)
		return sp, nil
	case ctx.Err() != nil:
		return sp, context.Cause(ctx)
	}
	sp.Status = view.StagePlanned
	if err != nil {
		sp.Status, sp.Error = view.StagePlanFailed, err.Error()
	}
	if res != nil {
		sp.RunID, sp.Checksum, sp.Components = res.RunID, res.Checksum, previewComponents(res)
		if res.Status != store.StatusSucceeded {
			sp.Status, sp.Error = view.StagePlanFailed, firstNonEmpty(res.Error, sp.Error, "the plan "+string(res.Status))
		}
		if res.Policy != nil {
			sp.Decisions = res.Policy.Decisions
		}
	}
	return sp, nil
}
