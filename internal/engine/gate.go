package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"

	"knit.dev/knit/internal/dag"
	"knit.dev/knit/internal/runner"
	"knit.dev/knit/internal/spec"
	"knit.dev/knit/internal/store"
)

// gate decides what waits for a person: whether a component's changes go
// on without asking (autoApprove, a drift policy, a rollback, a policy's
// require_approval), whether a plan may apply now (a "yes" at the
// terminal), and it stops a component at the gate with its approval.
type gate struct {
	s         *session
	approvals *approvals
	confirm   sync.Mutex // one interactive question at a time
	mu        sync.Mutex
	// mustApprove names the components a policy requires a person to
	// approve (require_approval), with the decision's text.
	mustApprove map[string]string
}

// require records that a policy requires a person to approve name's plan.
func (g *gate) require(name, why string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.mustApprove == nil {
		g.mustApprove = map[string]string{}
	}
	g.mustApprove[name] = why
}

// hold stops a component at the approval gate: its plan is kept for a
// person to approve, and its dependents wait.
// staleWhy says why an approved plan was not applied; differs how the
// plan differs from the approved change set.
func (g *gate) hold(st *step, p *prepared, plan *runner.Plan, staleWhy, differs string) error {
	id, err := g.approvals.requestApproval(st.c.Name, p.fp, plan)
	if err != nil {
		return st.fail(context.Background(), err)
	}
	return g.waitFor(st, plan, id, staleWhy, differs)
}

// holdAgain stops a component at the gate with the approval it already
// waits with: the plan a person may be reading stays the one to decide.
func (g *gate) holdAgain(st *step, a *store.Approval) error {
	plan := &runner.Plan{}
	if err := json.Unmarshal(a.Plan, plan); err != nil {
		return st.fail(context.Background(), fmt.Errorf("approval #%d: stored plan is unreadable: %w", a.ID, err))
	}
	g.approvals.setHeld(st.c.Name, heldPlan{id: a.ID, checksum: a.PlanChecksum})
	return g.waitFor(st, plan, a.ID, "", "")
}

// waitFor records a component waiting with approval #id of plan.
func (g *gate) waitFor(st *step, plan *runner.Plan, id int64, staleWhy, differs string) error {
	st.cr.Plan = plan
	what, code := "plan has changes", "awaiting-approval: plan has changes"
	if plan.Destroying {
		what, code = g.s.removed.destroyReason(st.c.Name)+"; the destroy plan", "awaiting-approval: destroy plan"
	}
	reason := fmt.Sprintf("%s: approve it with knit approve %s %s (approval #%d)", what, g.s.env.ID(), st.c.Name, id)
	switch {
	case differs != "":
		reason = fmt.Sprintf("%s; it needs a new approval: knit approve %s %s (approval #%d)", differs, g.s.env.ID(), st.c.Name, id)
		code = "awaiting-approval: plan differs from the approved change"
	case staleWhy != "":
		reason = fmt.Sprintf("the approved plan was not applied: %s; a fresh plan needs approval: knit approve %s %s (approval #%d)",
			staleWhy, g.s.env.ID(), st.c.Name, id)
	}
	if why := g.requiredByPolicy(st.c.Name); why != "" {
		reason = "a policy requires approval: " + why + "; " + reason
		code = "awaiting-approval: required by policy"
	}
	st.cr.Log = st.log.finish(nil)
	cause := ReasonAwaitingApproval.Cause()
	cause.ApprovalID = id
	g.s.setCode(st.cr, Awaiting, cause, code, reason)
	prev := g.s.state(st.c.Name)
	err := g.s.record(st.op, st.cr, st.storeRun, &store.ComponentState{Status: stateAwaiting, Fingerprint: prev.Fingerprint, Outputs: prev.Outputs})
	if err != nil {
		return err
	}
	return fmt.Errorf("%s: %w", st.c.Name, dag.ErrHold)
}

// approved decides whether a plan with changes may be applied now.
// autoApproved reports whether c's changes are applied without asking
// anyone, whatever its plan says.
func (g *gate) autoApproved(c *spec.Component) bool {
	if g.requiredByPolicy(c.Name) != "" {
		return false // a policy says a person decides
	}
	switch g.s.opts.Policies[c.Name] {
	case spec.DriftReconcile:
		return true
	case spec.DriftApprove:
		return false
	}
	return g.rollingBack(c) || g.s.opts.AutoApprove || g.s.env.EffectiveAutoApprove(c)
}

func (g *gate) approved(c *spec.Component, p *runner.Plan) bool {
	if g.requiredByPolicy(c.Name) != "" {
		return false // a policy says a person approves the exact plan
	}
	switch g.s.opts.Policies[c.Name] {
	case spec.DriftReconcile:
		return true // the drift policy says: fix it at once
	case spec.DriftApprove:
		return false // the drift policy says: a person decides
	}
	if g.rollingBack(c) || g.s.opts.AutoApprove || g.s.env.EffectiveAutoApprove(c) {
		return true
	}
	if g.s.opts.Confirm == nil {
		return false
	}
	g.confirm.Lock()
	defer g.confirm.Unlock()
	return g.s.opts.Confirm(c.Name, p)
}

// rollingBack reports whether c is re-applied by a rollback: going back to
// a revision that was applied before goes on without asking. A component
// the rollback destroys (the failed revision added it) is gated like any
// destroy (rollout.autoApprove, given as Options.AutoApprove, lets it go).
func (g *gate) rollingBack(c *spec.Component) bool {
	if g.s.kind != KindRollback {
		return false
	}
	removed := g.s.removed.has(c.Name)
	return !removed
}

// requiredByPolicy is why a policy requires a person to approve name's
// plan ("" if none does).
func (g *gate) requiredByPolicy(name string) string {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.mustApprove[name]
}

// stillWaiting returns c's pending approval when it may be held again as
// it is: made for this revision from the inputs c has now (fp), its saved
// plan intact, in an apply that asks nobody at a terminal. A change a run
// makes elsewhere (a sibling's apply) cannot affect such a plan.
func (g *gate) stillWaiting(c *spec.Component, fp string) (*store.Approval, error) {
	if !g.s.applies() || g.s.opts.Confirm != nil || g.s.opts.Refresh || g.autoApproved(c) {
		return nil, nil
	}
	a, err := g.approvals.openApproval(c.Name)
	if a == nil || err != nil || a.Status != store.ApprovalPending {
		return nil, err
	}
	if g.approvals.staleness(*a, fp) != "" {
		return nil, nil // planned again: the new plan replaces it
	}
	return a, nil
}
