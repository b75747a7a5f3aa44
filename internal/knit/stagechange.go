package knit

import (
	"context"
	"errors"
	"fmt"

	"knit.dev/knit/internal/spec"
	"knit.dev/knit/internal/store"
	"knit.dev/knit/internal/view"
)

// A stage change is a merged commit's change of a pipeline stage's own
// file (the file the stage names with file:): the promotion controller
// sees it once, at the first head whose file differs from the last one
// it read, and records it per stage (store.StageFile). It applies to the
// stage's current release at once (applyStageChanges: immediate) or waits
// Pending with its diff for approvals (pending), taken like a
// promotion's: the stage's approval rule, at least one approval, with
// requireOtherApprover judged by the commit's author as for a release. A
// later commit's change replaces one not applied yet; a release whose
// commit has the same file carries it.

// PutStageFile records what the promotion controller knows of a stage's
// own file, from the version it read (store.ErrConflict when it changed);
// with audited, the change's new state is audited on env.
func (k *Knit) PutStageFile(ctx context.Context, f view.StageFileRecord, env string, audited bool) error {
	if f.Change.ChangedAt.IsZero() && f.Change.State != "" {
		f.Change.ChangedAt = k.now()
	}
	var audit *store.AuditEvent
	if audited {
		c := f.Change
		detail := fmt.Sprintf("stage change %s (commit %s) %s in stage %s of pipeline %s", c.ID, shortCommit(c.Commit), c.State, f.Stage, f.Pipeline)
		if c.Release != "" {
			detail += " at release " + c.Release
		}
		if c.Message != "" {
			detail += ": " + firstLine(c.Message)
		}
		audit = &store.AuditEvent{Env: env, Actor: c.Actor, Action: AuditPromote, RunID: c.RunID, Reason: c.Reason, Detail: detail, Time: c.ChangedAt}
	}
	return k.store.PutStageFile(ctx, stageFileRow(f), audit)
}

// changeApprovalOf is stage st's approval rule for a change of its own
// file by author: the stage's rule, taking at least one approval.
func changeApprovalOf(st spec.Stage, c view.StageChangeRecord) releaseApproval {
	a := releaseApproval{stage: st.Name, author: c.Author, verified: c.AuthorVerified, required: 1}
	if st.Approval != nil {
		a.required, a.other = max(1, st.Approval.Required), st.Approval.RequireOtherApprover
	}
	if a.other && !a.verified {
		a.required++
	}
	return a
}

// stageChange is stage i's newest change as the API shows it, and why it
// waits: AwaitingApproval until its approvals suffice, then Ready (the
// server applies it once the stage is not busy); nil when none.
func (f *PipelineFacts) stageChange(i int, busy bool) *view.StageChange {
	st := f.Def.Spec.Stages[i]
	sf, ok := f.Files[st.Name]
	c := sf.Change
	if !ok || c.State == "" {
		return nil
	}
	v := &view.StageChange{ID: c.ID, Commit: c.Commit, Author: c.Author, AuthorVerified: c.AuthorVerified, Subject: c.Subject,
		Diff: c.Diff, State: c.State, Release: c.Release, RunID: c.RunID, Reason: c.Reason, Message: c.Message, ChangedAt: c.ChangedAt}
	if c.State != store.StageChangePending && c.State != store.StageChangeQueued {
		return v
	}
	given, forced := 0, false
	rule := changeApprovalOf(st, c)
	if c.State == store.StageChangePending {
		v.Approval = rule.view()
		for _, a := range f.Approvals {
			if a.Release == c.ID && a.Stage == st.Name {
				v.Approvals = append(v.Approvals, a.Actor)
				forced = forced || a.Forced
				if rule.counts(a.Actor) {
					given++
				}
			}
		}
	}
	switch {
	case c.State == store.StageChangePending && !forced && given < rule.required:
		v.Reason = view.WaitAwaitingApproval
		v.Message = fmt.Sprintf("%s: knit promote %s --change %s --to %s", rule.waitMessage(given), f.Record.Name, c.ID, st.Name)
	case busy:
		v.Reason, v.Message = view.WaitApplying, "approved; it applies once the stage's run ends"
	default:
		v.Reason, v.Message = view.WaitReady, "the server applies it to the stage's current release"
	}
	return v
}

// approveChange is Promote of a stage change (a.Change): an approval of
// the stage's pending change, refused from its verified author where the
// stage requires another approver (ErrOwnRelease); --force (an admin)
// passes the approvals. A change that failed starts again. A change a
// later commit replaced, or one applied, is refused (store.ErrConflict).
func (a *Promote) approveChange(ctx context.Context, f *PipelineFacts) (view.Stage, error) {
	k, name, stage := a.k, a.Pipeline, a.Stage
	i := f.stageIndex(stage)
	if i < 0 {
		return view.Stage{}, fmt.Errorf("%w: pipeline %s has no stage %q (stages: %s)", store.ErrNotFound, name, stage, f.stageNames())
	}
	if err := f.inTeam(stage); err != nil {
		return view.Stage{}, err
	}
	if a.Force {
		if t, ok := caller(ctx); ok && !t.Role.AtLeast(store.RoleAdmin) {
			return view.Stage{}, fmt.Errorf("%w: --force needs an admin token", ErrForbidden)
		}
	}
	sf := f.Files[stage]
	c := sf.Change
	switch {
	case c.ID == "":
		return view.Stage{}, fmt.Errorf("%w: stage %s of pipeline %s has no change of its file (knit pipeline status %s shows changes)", store.ErrNotFound, stage, name, name)
	case c.ID != a.Change:
		return view.Stage{}, fmt.Errorf("%w: stage %s's newest change is %s (commit %s), not %s: a later commit replaced it; approve %s",
			store.ErrConflict, stage, c.ID, shortCommit(c.Commit), a.Change, c.ID)
	case c.State == store.StageChangeFailed:
		return a.retryChange(ctx, f, sf)
	case c.State != store.StageChangePending:
		return view.Stage{}, fmt.Errorf("%w: stage change %s is %s in %s, not pending", store.ErrConflict, c.ID, c.State, stage)
	}
	rule := changeApprovalOf(f.Def.Spec.Stages[i], c)
	if !a.Force && rule.ownRelease(a.Actor) {
		return view.Stage{}, fmt.Errorf("%w: %s authored stage change %s", ErrOwnRelease, a.Actor, c.ID)
	}
	action, detail := AuditPromoteApprove, fmt.Sprintf("approved stage change %s (commit %s) of stage %s of pipeline %s", c.ID, shortCommit(c.Commit), stage, name)
	if a.Force {
		action, detail = AuditPromoteForce, fmt.Sprintf("forced stage change %s (commit %s) of stage %s of pipeline %s past its approvals", c.ID, shortCommit(c.Commit), stage, name)
	}
	err := k.store.ApprovePromotion(ctx, store.PromotionApproval{Pipeline: name, Release: c.ID, Stage: stage, Actor: a.Actor,
		Reason: a.Reason, Forced: a.Force, ApprovedAt: k.now()},
		&store.AuditEvent{Env: f.Envs[stage], Actor: a.Actor, Action: action, Reason: a.Reason, Detail: detail, Time: k.now()})
	if err != nil && !(errors.Is(err, store.ErrConflict) && !a.Force) {
		return view.Stage{}, err
	}
	return a.stageNow(ctx, i)
}

// retryChange queues again a stage change whose run failed (after its
// cause is fixed), audited as the person's.
func (a *Promote) retryChange(ctx context.Context, f *PipelineFacts, sf view.StageFileRecord) (view.Stage, error) {
	if busy := f.busyIn(sf.Stage); busy != nil {
		return view.Stage{}, fmt.Errorf("%w: %s is busy with release %s (%s): retry once it ends", store.ErrConflict, sf.Stage, busy.Release, busy.State)
	}
	sf.Change.State, sf.Change.RunID, sf.Change.Reason, sf.Change.Actor, sf.Change.ChangedAt = store.StageChangeQueued, "", "Retry", a.Actor, a.k.now()
	sf.Change.Message = fmt.Sprintf("retry by %s after: %s", a.Actor, firstLine(sf.Change.Message))
	if err := a.k.PutStageFile(ctx, sf, f.Envs[sf.Stage], true); err != nil {
		return view.Stage{}, err
	}
	return a.stageNow(ctx, f.stageIndex(sf.Stage))
}

// stageNow is stage i's status after an action.
func (a *Promote) stageNow(ctx context.Context, i int) (view.Stage, error) {
	f, err := a.k.Facts(ctx, a.Pipeline)
	if err != nil {
		return view.Stage{}, err
	}
	return f.Status(a.k.now()).Stages[i], nil
}

func shortCommit(h string) string {
	if len(h) > 10 {
		return h[:10]
	}
	return h
}
