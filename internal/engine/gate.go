package engine

import (
	"context"
	"encoding/json"
	"fmt"

	"knit.dev/knit/internal/dag"
	"knit.dev/knit/internal/runner"
	"knit.dev/knit/internal/spec"
	"knit.dev/knit/internal/store"
)

// hold stops a component at the approval gate: its plan is kept for a
// person to approve, and its dependents wait.
// staleWhy says why an approved plan was not applied; differs how the
// plan differs from the approved change set.
func (s *session) hold(st *step, p *prepared, plan *runner.Plan, staleWhy, differs string) error {
	id, err := s.requestApproval(st.c.Name, p.fp, plan)
	if err != nil {
		return st.fail(context.Background(), err)
	}
	return s.waitFor(st, plan, id, staleWhy, differs)
}

// holdAgain stops a component at the gate with the approval it already
// waits with: the plan a person may be reading stays the one to decide.
func (s *session) holdAgain(st *step, a *store.Approval) error {
	plan := &runner.Plan{}
	if err := json.Unmarshal(a.Plan, plan); err != nil {
		return st.fail(context.Background(), fmt.Errorf("approval #%d: stored plan is unreadable: %w", a.ID, err))
	}
	s.mu.Lock()
	s.holds[st.c.Name] = heldPlan{id: a.ID, checksum: a.PlanChecksum}
	s.mu.Unlock()
	return s.waitFor(st, plan, a.ID, "", "")
}

// waitFor records a component waiting with approval #id of plan.
func (s *session) waitFor(st *step, plan *runner.Plan, id int64, staleWhy, differs string) error {
	st.cr.Plan = plan
	what, code := "plan has changes", "awaiting-approval: plan has changes"
	if plan.Destroying {
		what, code = s.destroyReason(st.c.Name)+"; the destroy plan", "awaiting-approval: destroy plan"
	}
	reason := fmt.Sprintf("%s: approve it with knit approve %s %s (approval #%d)", what, s.env.ID(), st.c.Name, id)
	switch {
	case differs != "":
		reason = fmt.Sprintf("%s; it needs a new approval: knit approve %s %s (approval #%d)", differs, s.env.ID(), st.c.Name, id)
		code = "awaiting-approval: plan differs from the approved change"
	case staleWhy != "":
		reason = fmt.Sprintf("the approved plan was not applied: %s; a fresh plan needs approval: knit approve %s %s (approval #%d)",
			staleWhy, s.env.ID(), st.c.Name, id)
	}
	if why := s.requiredByPolicy(st.c.Name); why != "" {
		reason = "a policy requires approval: " + why + "; " + reason
		code = "awaiting-approval: required by policy"
	}
	st.cr.Log = st.log.finish(nil)
	cause := ReasonAwaitingApproval.Cause()
	cause.ApprovalID = id
	s.setCode(st.cr, Awaiting, cause, code, reason)
	prev := s.state(st.c.Name)
	err := s.record(st.op, st.cr, st.storeRun, &store.ComponentState{Status: stateAwaiting, Fingerprint: prev.Fingerprint, Outputs: prev.Outputs})
	if err != nil {
		return err
	}
	return fmt.Errorf("%s: %w", st.c.Name, dag.ErrHold)
}

// approved decides whether a plan with changes may be applied now.
// autoApproved reports whether c's changes are applied without asking
// anyone, whatever its plan says.
func (s *session) autoApproved(c *spec.Component) bool {
	if s.requiredByPolicy(c.Name) != "" {
		return false // a policy says a person decides
	}
	switch s.opts.Policies[c.Name] {
	case spec.DriftReconcile:
		return true
	case spec.DriftApprove:
		return false
	}
	return s.rollingBack(c) || s.opts.AutoApprove || s.env.EffectiveAutoApprove(c)
}

func (s *session) approved(c *spec.Component, p *runner.Plan) bool {
	if s.requiredByPolicy(c.Name) != "" {
		return false // a policy says a person approves the exact plan
	}
	switch s.opts.Policies[c.Name] {
	case spec.DriftReconcile:
		return true // the drift policy says: fix it at once
	case spec.DriftApprove:
		return false // the drift policy says: a person decides
	}
	if s.rollingBack(c) || s.opts.AutoApprove || s.env.EffectiveAutoApprove(c) {
		return true
	}
	if s.opts.Confirm == nil {
		return false
	}
	s.confirm.Lock()
	defer s.confirm.Unlock()
	return s.opts.Confirm(c.Name, p)
}

// rollingBack reports whether c is re-applied by a rollback: going back to
// a revision that was applied before goes on without asking. A component
// the rollback destroys (the failed revision added it) is gated like any
// destroy (rollout.autoApprove, given as Options.AutoApprove, lets it go).
func (s *session) rollingBack(c *spec.Component) bool {
	if s.kind != KindRollback {
		return false
	}
	_, removed := s.removed[c.Name]
	return !removed
}
