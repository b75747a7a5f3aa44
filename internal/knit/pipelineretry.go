package knit

import (
	"context"
	"fmt"
	"time"

	"knit.dev/knit/internal/store"
	"knit.dev/knit/internal/view"
)

// retryStage starts release again in stage i of f, where its run failed
// (failed is its state there): after the cause is fixed (a health
// endpoint down once), the same release is applied again, with no new
// commit and no soak again. The stage's own gates still hold (an open
// window, the approvals it already has) unless an admin forces past them;
// another release applying or tried in the stage since refuses it. The
// server's promotion controller applies it, as it applies a rollback a
// person asked for (StageQueued); the audit names the retry.
func (k *Knit) retryStage(ctx context.Context, f *PipelineFacts, i int, failed store.StageState, actor, reason string, force bool) (view.Stage, error) {
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
