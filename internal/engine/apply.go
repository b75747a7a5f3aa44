package engine

import (
	"context"
	"fmt"

	"knit.dev/knit/internal/dag"
	"knit.dev/knit/internal/runner"
	"knit.dev/knit/internal/spec"
	"knit.dev/knit/internal/store"
)

// Component state statuses kept in the store.
const (
	stateApplied   = "applied"
	stateFailed    = "failed"
	stateAwaiting  = "awaiting-approval"
	stateDestroyed = "destroyed"
)

// Apply brings the environment in line with env: components flagged
// destroy are destroyed first, then the rest is applied in dependency order,
// independent components in parallel. With spec.teardown it tears down instead.
// The error is for the run as a whole (lock held, store down); component
// failures are in the result.
func (e *Engine) Apply(ctx context.Context, env *spec.Environment, opts Options) (*Result, error) {
	if env.Spec.Teardown {
		return e.Teardown(ctx, env, opts)
	}
	s, err := e.begin(ctx, env, "apply", opts)
	if err != nil {
		return nil, err
	}
	err = s.apply(ctx)
	s.end(ctx, err)
	s.audit("apply", err)
	return s.result, err
}

func (s *session) apply(ctx context.Context) error {
	g, err := s.selected()
	if err != nil {
		return err
	}
	var doomed, keep []string
	for _, name := range g.Vertices() {
		if s.env.Component(name).Destroy {
			doomed = append(doomed, name)
		} else {
			keep = append(keep, name)
		}
	}
	if len(doomed) > 0 {
		s.destroyAll(ctx, g.Subgraph(doomed), s.refusals(doomed, false))
	}
	if ctx.Err() != nil {
		return nil
	}
	wr := g.Subgraph(keep).Walk(ctx, s.opts.Parallelism, s.applyOne)
	s.settle("apply", wr, defaultSettle)
	return nil
}

// applyOne plans one component and applies the plan when it is approved.
func (s *session) applyOne(ctx context.Context, name string) error {
	c := s.env.Component(name)
	cr := s.add(name, Planning)
	var log logBuffer
	var secrets []string
	var storeRun *store.ComponentRun
	fail := func(st Status, err error) error {
		if canceled(ctx, err) {
			st = Canceled
		}
		cr.Log = log.Redacted(secrets)
		s.set(cr, st, redact(err.Error(), secrets))
		prev := s.snapshot()[name]
		_ = s.record("apply", cr, storeRun, &store.ComponentState{Status: stateFailed, Outputs: prev.Outputs})
		return err
	}

	r, err := s.e.runnerFor(c)
	if err != nil {
		return fail(Failed, err)
	}
	states := s.snapshot()
	in, secrets, err := resolveInputs(c, states)
	if err != nil {
		return fail(Failed, err)
	}
	rc, err := s.e.component(s.env, c, &log)
	if err != nil {
		return fail(Failed, err)
	}
	fp, err := r.Fingerprint(ctx, rc, in)
	if err != nil {
		return fail(Failed, err)
	}
	prev := states[name]
	if !s.opts.Refresh && prev.Status == stateApplied && prev.Fingerprint == fp {
		s.set(cr, UpToDate, "")
		return s.record("apply", cr, nil, nil)
	}

	if storeRun, err = s.started("apply", cr); err != nil {
		return err
	}
	plan, err := r.Plan(ctx, rc, in, runner.PlanOptions{})
	if err != nil {
		return fail(Failed, fmt.Errorf("plan: %w", err))
	}
	cr.Plan = plan
	if plan.HasChanges() && !s.approved(c, plan) {
		cr.Log = log.Redacted(secrets)
		s.set(cr, Awaiting, "plan has changes; approve with --auto-approve or answer yes")
		err := s.record("apply", cr, storeRun, &store.ComponentState{Status: stateAwaiting, Fingerprint: prev.Fingerprint, Outputs: prev.Outputs})
		if err != nil {
			return err
		}
		return fmt.Errorf("%s: %w", name, dag.ErrHold)
	}

	var outs runner.Outputs
	if plan.HasChanges() {
		s.set(cr, Applying, "")
		outs, err = r.Apply(ctx, rc, plan)
	} else {
		outs, err = r.Outputs(ctx, rc)
	}
	if err != nil {
		return fail(Failed, fmt.Errorf("apply: %w", err))
	}
	stored, err := encodeOutputs(outs)
	if err != nil {
		return fail(Failed, err)
	}
	cr.Outputs = outs
	cr.Log = log.Redacted(append(secrets, sensitiveOutputs(outs)...))
	st := Applied
	if !plan.HasChanges() {
		st = NoChanges
	}
	s.set(cr, st, "")
	return s.record("apply", cr, storeRun, &store.ComponentState{Status: stateApplied, Fingerprint: fp, Outputs: stored})
}

// approved decides whether a plan with changes may be applied now.
func (s *session) approved(c *spec.Component, p *runner.Plan) bool {
	if s.opts.AutoApprove || s.env.EffectiveAutoApprove(c) {
		return true
	}
	if s.opts.Confirm == nil {
		return false
	}
	s.confirm.Lock()
	defer s.confirm.Unlock()
	return s.opts.Confirm(c.Name, p)
}

func sensitiveOutputs(outs runner.Outputs) []string {
	var out []string
	for _, o := range outs {
		if o.Sensitive {
			out = append(out, sensitiveStrings(o.Value)...)
		}
	}
	return out
}

// audit records the run in the audit trail.
func (s *session) audit(action string, err error) {
	detail := s.result.Status
	if err != nil {
		detail = err.Error()
	}
	_ = s.e.Store.AppendAudit(s.db, store.AuditEvent{
		Env: s.env.ID(), Actor: s.e.Actor, Action: action, Revision: s.run.Revision,
		RunID: s.run.ID, Reason: s.opts.Reason, Detail: detail, Time: s.e.now(),
	})
	status := envStatus[s.result.Status]
	if action == "teardown" && s.result.Status == store.StatusSucceeded {
		status = "torn-down"
	}
	if action != "plan" && status != "" {
		_ = s.e.Store.SetEnvironmentStatus(s.db, s.env.ID(), status)
	}
}

// envStatus maps a run's outcome to the environment's status.
var envStatus = map[string]string{
	store.StatusSucceeded: "provisioned", store.StatusFailed: "failed",
	store.StatusAwaiting: "awaiting-approval", store.StatusInterrupted: "interrupted",
}
