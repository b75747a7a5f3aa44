package promotion

import (
	"context"
	"errors"
	"fmt"
	"path"
	"path/filepath"

	"knit.dev/knit/internal/engine"
	"knit.dev/knit/internal/knit"
	"knit.dev/knit/internal/spec"
	"knit.dev/knit/internal/store"
	"knit.dev/knit/internal/view"
)

// judgeChanges follows the runs applying changes of pipeline f's stage
// files and starts the changes that are Ready (immediate, or approved,
// and the stage not busy).
func (c *Controller) judgeChanges(ctx context.Context, f *knit.PipelineFacts) error {
	for i, st := range f.Status(c.clock.Now()).Stages {
		sc, sf := st.StageChange, f.Files[st.Name]
		var err error
		switch {
		case sc == nil:
		case sc.State == view.StageChangeApplying:
			err = c.followChange(ctx, sf, st.Env)
		case (sc.State == view.StageChangePending || sc.State == view.StageChangeQueued) && sc.Reason == view.WaitReady:
			err = c.applyChange(ctx, f, i, sf, st)
		}
		if err != nil && !errors.Is(err, store.ErrConflict) {
			return err
		}
	}
	return nil
}

// applyChange queues the apply of stage i's change sf at the release the
// stage runs (st.Current): the stage's file at the change's commit, its
// template and bases at the release's commit, with the release's promote
// parameters. A stage no release was verified in has nothing to apply it
// to: the next release entering takes the file. A change that names
// another environment or template than the stage's and its release's
// failed (a template change enters through the first stage, as a release).
func (c *Controller) applyChange(ctx context.Context, f *knit.PipelineFacts, i int, sf view.StageFileRecord, st view.Stage) error {
	ch, stage := &sf.Change, f.Def.Spec.Stages[i]
	ch.Actor, ch.ChangedAt, ch.Reason = c.cfg.Actor, c.clock.Now(), ""
	var r *view.ReleaseRecord
	if st.Current != nil {
		r = f.ReleaseByID(st.Current.Release)
	}
	if r == nil {
		sf.AppliedCommit, ch.State = ch.Commit, store.StageChangeApplied
		ch.Message = "no release is verified in " + stage.Name + ": the next release to enter it takes this file"
		return c.k.PutStageFile(ctx, sf, st.Env, true)
	}
	ch.Release = r.ID
	req, err := c.changeRequest(ctx, f.Record.Name, stage, sf, *r, st.Env)
	if err != nil {
		ch.State, ch.Reason, ch.Message = store.StageChangeFailed, view.WaitApplyFailed, err.Error()
		return c.k.PutStageFile(ctx, sf, st.Env, true)
	}
	id, err := c.q.EnqueueWith(req, st.Env, nil)
	if err != nil {
		return err
	}
	c.log.Info("pipelines: applying a stage change", "pipeline", f.Record.Name, "stage", stage.Name, "change", ch.ID, "release", r.ID, "run", id)
	ch.State, ch.RunID, ch.Message = store.StageChangeApplying, id, ""
	return c.k.PutStageFile(ctx, sf, st.Env, true)
}

// changeRequest is the run applying change sf of stage st at release r.
func (c *Controller) changeRequest(ctx context.Context, pipeline string, st spec.Stage, sf view.StageFileRecord, r view.ReleaseRecord, envID string) (knit.RunRequest, error) {
	ch := sf.Change
	rel, err := stageRel(c.fileOf(pipeline), st)
	if err != nil {
		return knit.RunRequest{}, err
	}
	dir, err := c.w.Checkout(ctx, r.Commit)
	if err != nil {
		return knit.RunRequest{}, err
	}
	data, err := c.fileAt(ctx, ch.Commit, rel)
	if err != nil {
		return knit.RunRequest{}, err
	}
	params, err := paramsOf(r.Params)
	if err != nil {
		return knit.RunRequest{}, err
	}
	env, err := c.parse(dir, rel, st, data, params)
	if err != nil {
		return knit.RunRequest{}, err
	}
	if env.ID() != envID {
		return knit.RunRequest{}, fmt.Errorf("stage %s: %s names environment %s at %s, the pipeline's stage is %s", st.Name, st.File, env.ID(), short(ch.Commit), envID)
	}
	if content, err := spec.ReleaseOf(env); err != nil || content.Template != r.Template {
		return knit.RunRequest{}, fmt.Errorf("stage %s: %s at %s names another template than release %s (%s): a template changes through the first stage, as a new release",
			st.Name, st.File, short(ch.Commit), r.ID, r.Template)
	}
	actor, source := ch.Author, knit.SourceGit
	if ch.AuthorVerified {
		source = SourcePipeline
	}
	return knit.RunRequest{Kind: engine.KindApply, Env: env, Root: filepath.Join(dir, filepath.FromSlash(path.Dir(rel))), Tree: dir,
		Actor: actor, Source: source, Reason: fmt.Sprintf("pipeline %s: stage change %s of %s at release %s", pipeline, ch.ID, st.Name, r.ID),
		Commit: ch.Commit, Author: ch.Author, Message: ch.Subject, Origin: c.cfg.Git.URL + "@" + ch.Commit + ":" + rel}, nil
}

// followChange records the end of the run applying stage change sf:
// Applied (the stage's file is the change's from now on) or Failed; a run
// at its environment's approval gate waits (AwaitingApproval), and the
// run that carries the approval out replaces it.
func (c *Controller) followChange(ctx context.Context, sf view.StageFileRecord, envID string) error {
	ch := &sf.Change
	run, err := c.k.RunRecord(ctx, ch.RunID)
	if errors.Is(err, store.ErrNotFound) {
		return nil // queued, not started yet
	} else if err != nil {
		return err
	}
	ch.Actor, ch.ChangedAt = c.cfg.Actor, c.clock.Now()
	switch run.Run.Status {
	case store.StatusSucceeded:
		sf.AppliedCommit, ch.State, ch.Reason = ch.Commit, store.StageChangeApplied, ""
		ch.Message = fmt.Sprintf("applied by run %s at release %s", run.Run.ID, ch.Release)
	case store.StatusAwaiting:
		msg, err := c.gateMessage(ctx, run.Run, envID)
		if err != nil || ch.Reason == view.WaitAwaitingApproval && ch.Message == msg {
			return err
		}
		ch.Reason, ch.Message = view.WaitAwaitingApproval, msg
		return c.k.PutStageFile(ctx, sf, envID, false)
	case store.StatusSuperseded:
		if by, ok, err := c.successor(ctx, run.Run); err != nil || ok {
			if ok {
				ch.RunID, ch.Reason, ch.Message = by, "", ""
				err = c.k.PutStageFile(ctx, sf, envID, false)
			}
			return err
		}
		fallthrough
	case store.StatusFailed, store.StatusInterrupted, store.StatusRefused:
		ch.State, ch.Reason, ch.Message = store.StageChangeFailed, view.WaitApplyFailed, run.Run.Error
		if ch.Message == "" {
			ch.Message = fmt.Sprintf("run %s %s", run.Run.ID, run.Run.Status)
		}
	default:
		return nil // running or verifying
	}
	return c.k.PutStageFile(ctx, sf, envID, true)
}

// gotFile records that run runID applying release to stage read the
// stage's file at fileCommit, and, when it carries the stage's newest
// change (carried), that the change is applied with the release.
func (c *Controller) gotFile(ctx context.Context, f *knit.PipelineFacts, stage, fileCommit string, carried *view.StageFileRecord, release, runID, envID string) error {
	sf, ok := f.Files[stage]
	switch {
	case carried != nil:
		sf = *carried
		sf.Change.State, sf.Change.Release, sf.Change.RunID, sf.Change.Reason = store.StageChangeApplied, release, runID, ""
		sf.Change.Message = fmt.Sprintf("carried by release %s (run %s), whose commit has it", release, runID)
		sf.Change.Actor, sf.Change.ChangedAt = c.cfg.Actor, c.clock.Now()
	case !ok || sf.AppliedCommit == fileCommit:
		return nil
	}
	sf.AppliedCommit = fileCommit
	err := c.k.PutStageFile(ctx, sf, envID, carried != nil)
	if errors.Is(err, store.ErrConflict) {
		c.log.Warn("pipelines: the stage file changed while a release started", "stage", stage, "release", release)
		return nil
	}
	return err
}
