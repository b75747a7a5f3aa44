package knit

import (
	"context"
	"errors"
	"fmt"
	"time"

	"knit.dev/knit/internal/store"
	"knit.dev/knit/internal/view"
)

// PromoteOptions ask for Release to enter Stage of pipeline Pipeline, as
// Actor, for Reason; Force passes the stage's gates by (an admin's token,
// or the local CLI), audited.
//
// Change, instead of Release, names a change of the stage's own file
// (c-…, from knit pipeline status) to approve (approveChange).
type PromoteOptions struct {
	Pipeline, Release, Stage string
	Change                   string
	Actor, Reason            string
	Force                    bool
}

// Promote is the action that asks for a release to enter a stage of a
// promotion pipeline: the same rules as the server's own promotions
// (soak, windows, approvals). A stage that requires approvals takes the
// actor's (refused, ErrOwnRelease, from the release's verified author
// when the stage requires another approver; see releaseApproval); Force
// needs an admin's token (ErrForbidden) and is audited. A stage whose
// environment is not of the pipeline's team is refused (ErrForbidden). A
// release that failed in the stage starts there again (retry). It
// returns the stage's status after: the server's promotion controller
// applies a release that is Ready, through the one door (Run).
type Promote struct {
	k *Knit
	PromoteOptions
}

// NewPromote is the action that promotes as opts say on k.
func NewPromote(k *Knit, opts PromoteOptions) *Promote { return &Promote{k: k, PromoteOptions: opts} }

// Run asks for the promotion and returns the stage's status after.
func (a *Promote) Run(ctx context.Context) (view.Stage, error) {
	k, name, release, stage, actor, reason, force := a.k, a.Pipeline, a.Release, a.Stage, a.Actor, a.Reason, a.Force
	f, err := k.Facts(ctx, name)
	if err != nil {
		return view.Stage{}, err
	}
	if a.Change != "" {
		return a.approveChange(ctx, f)
	}
	i := f.stageIndex(stage)
	switch {
	case i < 0:
		return view.Stage{}, fmt.Errorf("%w: pipeline %s has no stage %q (stages: %s)", store.ErrNotFound, name, stage, f.stageNames())
	case i == 0:
		return view.Stage{}, fmt.Errorf("%w: releases enter the first stage, %s, from commits: promote to a later stage", store.ErrConflict, stage)
	case f.release(release) == nil:
		return view.Stage{}, fmt.Errorf("%w: pipeline %s has no release %q (knit releases %s lists them)", store.ErrNotFound, name, release, name)
	}
	if err := f.inTeam(stage); err != nil {
		return view.Stage{}, err
	}
	prev := f.Def.Spec.Stages[i-1].Name
	if s := f.state(release, prev); s == nil || s.State != store.StageSucceeded {
		return view.Stage{}, fmt.Errorf("%w: release %s is not verified in %s, the stage before %s", store.ErrConflict, release, prev, stage)
	}
	if force {
		if t, ok := caller(ctx); ok && !t.Role.AtLeast(store.RoleAdmin) {
			return view.Stage{}, fmt.Errorf("%w: --force needs an admin token", ErrForbidden)
		}
	}
	if s := f.state(release, stage); s != nil {
		if s.State == store.StageFailed {
			return a.retry(ctx, f, i, *s)
		}
		return view.Stage{}, fmt.Errorf("%w: release %s is %s in %s already", store.ErrConflict, release, s.State, stage)
	}
	st := f.Def.Spec.Stages[i]
	needs := st.Approval != nil && st.Approval.Required > 0
	if force || needs {
		if !force && approvalOf(st, f.release(release)).ownRelease(actor) {
			return view.Stage{}, fmt.Errorf("%w: %s authored release %s", ErrOwnRelease, actor, release)
		}
		action, detail := AuditPromoteApprove, fmt.Sprintf("approved release %s into stage %s of pipeline %s", release, stage, name)
		if force {
			action, detail = AuditPromoteForce, fmt.Sprintf("forced release %s into stage %s of pipeline %s past its gates", release, stage, name)
		}
		err := k.store.ApprovePromotion(ctx, store.PromotionApproval{Pipeline: name, Release: release, Stage: stage, Actor: actor,
			Reason: reason, Forced: force, ApprovedAt: k.now()},
			&store.AuditEvent{Env: f.Envs[stage], Actor: actor, Action: action, Reason: reason, Detail: detail, Time: k.now()})
		if err != nil && !(errors.Is(err, store.ErrConflict) && !force) {
			return view.Stage{}, err
		}
		if f, err = k.Facts(ctx, name); err != nil {
			return view.Stage{}, err
		}
	}
	return f.Status(k.now()).Stages[i], nil
}

// retry starts release again in stage i of f, where its run failed
// (failed is its state there): after the cause is fixed (a health
// endpoint down once), the same release is applied again, with no new
// commit and no soak again. The stage's own gates still hold (an open
// window, the approvals it already has) unless an admin forces past them;
// another release applying or tried in the stage since refuses it. The
// server's promotion controller applies it, as it applies a rollback a
// person asked for (StageQueued); the audit names the retry.
func (a *Promote) retry(ctx context.Context, f *PipelineFacts, i int, failed view.StageState) (view.Stage, error) {
	k, actor, reason, force := a.k, a.Actor, a.Reason, a.Force
	st := f.Def.Spec.Stages[i]
	now := k.now()
	cur, busy := f.Status(now).Stages[i], f.busyIn(st.Name)
	switch {
	case busy != nil:
		return view.Stage{}, fmt.Errorf("%w: %s is busy with release %s (%s): retry once it ends", store.ErrConflict, st.Name, busy.Release, busy.State)
	case cur.Last == nil || cur.Last.Release != failed.Release:
		return view.Stage{}, fmt.Errorf("%w: release %s failed in %s, but a newer release was tried there since: retry that one", store.ErrConflict, failed.Release, st.Name)
	}
	if !force {
		if !st.Windows.Open(now) {
			return view.Stage{}, fmt.Errorf("%w: no promotion window of %s is open (the next change is at %s): retry then, or an admin forces it (--force)",
				store.ErrConflict, st.Name, st.Windows.NextChange(now).UTC().Format(time.RFC3339))
		}
		rule := approvalOf(st, f.release(failed.Release))
		given := 0
		for _, a := range f.Approvals {
			if a.Release == failed.Release && a.Stage == st.Name && (a.Forced || rule.counts(a.Actor)) {
				given++
			}
		}
		if given < rule.required {
			return view.Stage{}, fmt.Errorf("%w: %s: %s", store.ErrConflict, st.Name, rule.waitMessage(given))
		}
	}
	next := failed
	next.State, next.Reason, next.RunID, next.Actor, next.ChangedAt = store.StageQueued, "Retry", "", actor, now
	next.Message = fmt.Sprintf("retry by %s after: %s", actor, firstLine(failed.Message))
	if reason != "" {
		next.Message = fmt.Sprintf("retry by %s (%s) after: %s", actor, reason, firstLine(failed.Message))
	}
	if err := k.SetStage(ctx, next, store.StageFailed, f.Envs[st.Name]); err != nil {
		return view.Stage{}, err
	}
	f, err := k.Facts(ctx, f.Record.Name)
	if err != nil {
		return view.Stage{}, err
	}
	return f.Status(k.now()).Stages[i], nil
}
