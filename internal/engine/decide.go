package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"knit.dev/knit/internal/runner"
	"knit.dev/knit/internal/spec"
	"knit.dev/knit/internal/store"
)

// ErrChecksumMismatch: the plan waiting for approval is not the one named.
var ErrChecksumMismatch = errors.New("the plan waiting for approval is not the one named")

// ErrChecksumRequired: a decision did not name the plan or change set it is about.
var ErrChecksumRequired = errors.New("a decision must name the checksum of the plan or change set it is about")

// Decide approves or rejects the plan awaiting approval for component, as
// actor, recording who and why in the audit trail. Approving a plan made
// for another revision than the one the environment is applied at fails
// with ErrStale. Deciding changes no resource: starting the apply that
// uses an approved plan is the caller's next step.
func (e *Engine) Decide(ctx context.Context, env *spec.Environment, component string, approve bool, actor, reason string) (store.Approval, error) {
	return e.DecidePlan(ctx, env, component, "", approve, actor, reason)
}

// DecidePlan is Decide of the plan with checksum (any waiting plan when
// checksum is empty). The check and the decision are one step: the
// decision is fenced on that approval's ID, so a plan made in between is
// never decided in the place of the one a person read.
func (e *Engine) DecidePlan(ctx context.Context, env *spec.Environment, component, checksum string, approve bool, actor, reason string) (store.Approval, error) {
	a, err := e.Store.OpenApproval(ctx, env.ID(), component)
	if errors.Is(err, store.ErrNotFound) || (err == nil && a.Status != store.ApprovalPending) {
		return a, e.nothingPending(ctx, env, component)
	}
	if err != nil {
		return a, err
	}
	if checksum != "" && checksum != a.PlanChecksum {
		return a, fmt.Errorf("%w: approval #%d of %s is for plan %s, not %s; look at the plan again (knit approvals %s)",
			ErrChecksumMismatch, a.ID, component, shortSum(a.PlanChecksum), shortSum(checksum), env.ID())
	}
	to, action := store.ApprovalRejected, "reject"
	if approve {
		to, action = store.ApprovalApproved, "approve"
		envRec, err := e.Store.Environment(ctx, env.ID())
		if err != nil {
			return a, fmt.Errorf("read %s: %w", env.ID(), err)
		}
		if envRec.AppliedRevision != a.Revision {
			return a, fmt.Errorf("%w: approval #%d is for revision %d, and %s is now applied at revision %d: run knit apply for a fresh plan, then approve that",
				ErrStale, a.ID, a.Revision, env.ID(), envRec.AppliedRevision)
		}
	}
	now := e.now()
	if err := e.Store.DecideApproval(ctx, a.ID, store.ApprovalPending, to, actor, reason, now); err != nil {
		return a, err
	}
	a.Status, a.DecidedBy, a.Reason, a.DecidedAt = to, actor, reason, now
	var p runner.Plan
	if err := json.Unmarshal(a.Plan, &p); err != nil {
		return a, fmt.Errorf("approval #%d: stored plan is unreadable: %w", a.ID, err)
	}
	what := fmt.Sprintf("approval #%d: +%d ~%d -%d", a.ID, p.Add, p.Change, p.Destroy)
	if p.Destroying {
		what += " (destroy)"
	}
	if err := e.Store.AppendAudit(ctx, store.AuditEvent{Env: env.ID(), Actor: actor, Action: action, Component: component,
		Revision: a.Revision, RunID: a.RunID, Reason: reason, Time: now, Detail: what}); err != nil {
		return a, fmt.Errorf("record the %s in the audit trail: %w", action, err)
	}
	if !approve {
		if err := e.outdateChangesHolding(ctx, a, actor); err != nil {
			return a, err
		}
		return a, e.settleRejected(ctx, env.ID(), component)
	}
	return a, nil
}

// outdateChangesHolding marks stale the waiting change sets that hold
// approval a, now rejected: approving them whole is no longer possible.
func (e *Engine) outdateChangesHolding(ctx context.Context, a store.Approval, actor string) error {
	open, err := e.Store.ListChangeSets(ctx, store.ChangeSetFilter{Env: a.Env, Statuses: []string{store.ChangeSetPending}})
	if err != nil {
		return fmt.Errorf("read the waiting change sets of %s: %w", a.Env, err)
	}
	for _, cs := range open {
		if !slices.ContainsFunc(cs.Components, func(c store.ChangeSetComponent) bool { return c.ApprovalID == a.ID }) {
			continue
		}
		why := fmt.Sprintf("approval #%d of %s in it was rejected", a.ID, a.Component)
		err := e.Store.DecideChangeSet(ctx, cs.ID, store.ChangeSetPending, store.ChangeSetStale, actor, why, e.now())
		if err != nil && !errors.Is(err, store.ErrConflict) {
			return fmt.Errorf("mark change set #%d stale: %w", cs.ID, err)
		}
	}
	return nil
}

// nothingPending says why no plan of component awaits a decision: its
// latest approval went stale (ErrStale, with the reason), or there is
// none to decide (ErrNothingToApprove).
func (e *Engine) nothingPending(ctx context.Context, env *spec.Environment, component string) error {
	latest, err := e.Store.ListApprovals(ctx, store.ApprovalFilter{Env: env.ID(), Component: component, Limit: 1, NewestFirst: true})
	if err != nil {
		return fmt.Errorf("read the approvals of %s: %w", component, err)
	}
	if len(latest) == 1 && latest[0].Status == store.ApprovalStale {
		a := latest[0]
		why := a.Reason
		if why == "" {
			why = "a newer plan replaced it"
		}
		return fmt.Errorf("%w: approval #%d of %s in %s: %s; nothing was applied: plan it again (knit apply %s), then approve that",
			ErrStale, a.ID, component, env.ID(), why, env.ID())
	}
	return fmt.Errorf("%w: no plan of %s in %s is pending (knit approvals %s)", ErrNothingToApprove, component, env.ID(), env.ID())
}

// DecideChange approves or rejects env's pending change set whose
// checksum is checksum (or starts with it: at least 12 characters), as
// actor: every held plan in it is approved (or rejected) with it, in one
// store write, and the decision is audited. It applies nothing: the next
// apply does. Another change set waiting is ErrChecksumMismatch; none
// waiting is ErrStale (with why) or ErrNothingToApprove.
func (e *Engine) DecideChange(ctx context.Context, envID, checksum string, approve bool, actor, reason string) (store.ChangeSet, error) {
	if len(checksum) < 12 {
		return store.ChangeSet{}, fmt.Errorf("%w: give at least 12 characters of the change set's checksum (knit approvals %s)", ErrChecksumRequired, envID)
	}
	sets, err := e.Store.ListChangeSets(ctx, store.ChangeSetFilter{Env: envID, Limit: 1})
	if err != nil {
		return store.ChangeSet{}, fmt.Errorf("read the change sets of %s: %w", envID, err)
	}
	if len(sets) == 0 {
		return store.ChangeSet{}, fmt.Errorf("%w: no change set of %s waits (knit approvals %s)", ErrNothingToApprove, envID, envID)
	}
	cs := sets[0]
	if !strings.HasPrefix(cs.Checksum, checksum) {
		return cs, fmt.Errorf("%w: the change set of %s waiting is %s, not %s; look at it again (knit approvals %s)",
			ErrChecksumMismatch, envID, shortSum(cs.Checksum), shortSum(checksum), envID)
	}
	if cs.Status != store.ChangeSetPending {
		return cs, fmt.Errorf("%w: change set #%d of %s is %s, so it can no longer be decided (knit approvals %s)",
			ErrStale, cs.ID, envID, cs.Status, envID)
	}
	to, action := store.ChangeSetRejected, "reject"
	if approve {
		to, action = store.ChangeSetApproved, "approve"
		rec, err := e.Store.Environment(ctx, envID)
		if err != nil {
			return cs, fmt.Errorf("read %s: %w", envID, err)
		}
		if rec.AppliedRevision != cs.Revision {
			return cs, fmt.Errorf("%w: change set #%d is for revision %d, and %s is now applied at revision %d: run knit apply for a fresh plan, then approve that",
				ErrStale, cs.ID, cs.Revision, envID, rec.AppliedRevision)
		}
	}
	now := e.now()
	if err := e.Store.DecideChangeSet(ctx, cs.ID, store.ChangeSetPending, to, actor, reason, now); err != nil {
		if errors.Is(err, store.ErrConflict) {
			return cs, fmt.Errorf("%w: %w; plan it again (knit apply %s)", ErrStale, err, envID)
		}
		return cs, err
	}
	cs.Status, cs.DecidedBy, cs.Reason, cs.DecidedAt = to, actor, reason, now
	names := make([]string, 0, len(cs.Components))
	for _, c := range cs.Components {
		names = append(names, c.Component)
	}
	if err := e.Store.AppendAudit(ctx, store.AuditEvent{Env: envID, Actor: actor, Action: action, Revision: cs.Revision,
		RunID: cs.RunID, Reason: reason, Time: now,
		Detail: fmt.Sprintf("change set #%d (%s): %s", cs.ID, shortSum(cs.Checksum), strings.Join(names, ", "))}); err != nil {
		return cs, fmt.Errorf("record the %s in the audit trail: %w", action, err)
	}
	return cs, nil
}
