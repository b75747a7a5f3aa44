package engine

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"knit.dev/knit/internal/runner"
	"knit.dev/knit/internal/spec"
	"knit.dev/knit/internal/store"
)

// Drift plans every applied component against reality, in parallel along
// the graph, and reports each as in sync, drifted (with the resources that
// differ) or failed. A component that takes an output that drift would
// change is reported affected by upstream drift. With reconcile, drifted and
// affected components are brought back in graph order: applied at once where
// autoApprove allows, otherwise stopped awaiting approval of their plan.
func (e *Engine) Drift(ctx context.Context, env *spec.Environment, opts Options, reconcile bool) (*Result, error) {
	opts.Reconcile = reconcile
	return e.Do(ctx, KindDrift, env, opts)
}

func (s *session) drift(ctx context.Context) error {
	return s.walkSelected(ctx, "drift", s.driftOne)
}

func (s *session) driftOne(ctx context.Context, name string) error {
	st := s.newStep(name, Checking)
	st.op = "drift"
	prev := s.state(name)
	if !live(prev) {
		s.set(st.cr, NotApplied, "never applied: knit apply creates it")
		return s.record(st.op, st.cr, nil, nil)
	}
	if ups := s.affectedBy(st.c); len(ups) > 0 {
		st.cr.Drift, st.cr.AffectedBy = Affected, ups
		if s.opts.Reconcile && s.opts.Policies[name] != spec.DriftAlert {
			st.force = true
			return s.converge(ctx, st, nil, nil)
		}
		s.set(st.cr, Affected, "takes "+strings.Join(ups, ", ")+", which drift changes")
		return s.record(st.op, st.cr, nil, &store.ComponentState{Status: stateDrifted, Fingerprint: prev.Fingerprint, Outputs: prev.Outputs})
	}

	p, err := st.prepare(ctx, true)
	if err != nil {
		return st.fail(ctx, err)
	}
	if st.storeRun, err = s.started(st.op, st.cr); err != nil {
		return err
	}
	// Drift names the attributes that differ (driftSummary); an in-sync
	// component costs one tool run all the same.
	plan, err := p.r.Plan(ctx, p.rc, p.in, runner.PlanOptions{Attributes: true})
	if err != nil {
		return st.fail(ctx, fmt.Errorf("plan: %w", err))
	}
	st.cr.Plan = plan
	st.cr.Log = st.log.Redacted(st.secrets)
	if !plan.HasChanges() {
		st.cr.Drift = InSync
		s.set(st.cr, InSync, "")
		return s.record(st.op, st.cr, st.storeRun, &store.ComponentState{Status: stateApplied, Fingerprint: p.fp, Outputs: prev.Outputs})
	}
	st.cr.Drift = Drifted
	if s.opts.Reconcile && s.opts.Policies[name] != spec.DriftAlert {
		return s.converge(ctx, st, p, plan)
	}
	s.set(st.cr, Drifted, driftSummary(plan))
	if err := s.auditFinding(st.cr); err != nil {
		return st.fail(ctx, err)
	}
	return s.record(st.op, st.cr, st.storeRun, &store.ComponentState{Status: stateDrifted, Fingerprint: prev.Fingerprint, Outputs: prev.Outputs})
}

// affectedBy lists the upstream outputs this component takes that drift in
// this run would change: outputs a drifted producer's plan changes, or any
// output of a producer that is itself affected.
func (s *session) affectedBy(c *spec.Component) []string {
	var ups []string
	for _, v := range c.Variables {
		ref, ok := spec.ParseValueFrom(v.ValueFrom)
		if !ok {
			continue
		}
		s.mu.Lock()
		up := s.result.Component(ref.Component)
		s.mu.Unlock()
		if up == nil {
			continue
		}
		changes := up.Drift == Affected
		if up.Drift == Drifted && up.Plan != nil {
			for _, o := range up.Plan.OutputChanges {
				changes = changes || o == ref.Output
			}
		}
		if changes {
			ups = append(ups, ref.Component+"."+ref.Output)
		}
	}
	sort.Strings(ups)
	return ups
}

// driftSummary names the resources that differ and how.
func driftSummary(p *runner.Plan) string {
	parts := make([]string, 0, len(p.Resources))
	for _, r := range p.Resources {
		s := fmt.Sprintf("%s (%s", r.Address, r.Action)
		if len(r.Attributes) > 0 {
			s += ": " + strings.Join(r.Attributes, ", ")
		}
		parts = append(parts, s+")")
	}
	return strings.Join(parts, "; ")
}

// auditFinding records one drifted component in the audit trail.
func (s *session) auditFinding(cr *ComponentResult) error {
	err := s.e.Store.AppendAudit(s.db, store.AuditEvent{Env: s.env.ID(), Actor: s.opts.Actor, Action: "drift-found",
		Component: cr.Name, Revision: s.run.Revision, RunID: s.run.ID, Detail: driftSummary(cr.Plan), Time: s.e.now()})
	if err != nil {
		return fmt.Errorf("record drift of %s in the audit trail: %w", cr.Name, err)
	}
	return nil
}
