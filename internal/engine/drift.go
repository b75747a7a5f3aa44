package engine

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"

	"knit.dev/knit/internal/dag"
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

// drifter is a drift run's walk: it checks every live component against
// reality at once (checkAll), then judges the checks in graph order
// (driftOne): in sync, drifted, affected by upstream drift; a reconcile
// brings drift back through the applier.
type drifter struct {
	s       *session
	judging *judging
	gate    *gate
	applier *applier
}

func newDrifter(s *session) *drifter {
	return &drifter{s: s, judging: s.judging, gate: s.gate, applier: newApplier(s)}
}

// ErrTearingDown: a drift check of an environment whose applied revision
// is a teardown (waiting for approval, or done). Reconciling it would
// re-apply what is being destroyed, so no drift run starts: scheduled
// (the server) or asked for (knit drift, the API) alike.
var ErrTearingDown = errors.New("its teardown is waiting for approval or done")

// Driftable says whether drift may check env, the applied spec: not once
// a teardown of the whole environment was recorded (ErrTearingDown).
func Driftable(env *spec.Environment) error {
	if env.Spec.Teardown {
		return fmt.Errorf("no drift check of %s: %w (knit approvals %s; knit apply -f FILE brings it back)", env.ID(), ErrTearingDown, env.ID())
	}
	return nil
}

func (dr *drifter) drift(ctx context.Context) (denied error) {
	g, err := dr.s.selected()
	if err != nil {
		return err
	}
	checks := dr.newChecks(g)
	checked := make(chan struct{})
	go func() {
		defer close(checked)
		dr.checkAll(ctx, checks)
	}()
	if dr.s.opts.Reconcile {
		// Judging may reconcile, which runs tools: start it only when no
		// check runs any more, so the two never pass the parallelism
		// together.
		<-checked
		if dr.s.opts.Judge != nil && ctx.Err() == nil {
			if denied = dr.judgeDrift(ctx, g, checks); denied != nil {
				var pd *PolicyDeniedError
				if !errors.As(denied, &pd) {
					return denied // the policies could not judge: nothing is reconciled
				}
				// Denied: drift is reported, nothing is reconciled.
				dr.s.opts.Reconcile = false
			}
		}
	}
	// Without a reconcile, judging runs no tool, so it follows the checks
	// as they end: a component is judged once its own check and its
	// upstream's judgements are done, and only the last checks' judgements
	// are left when the last check ends.
	wr := g.Walk(ctx, dr.s.opts.Parallelism, func(ctx context.Context, name string) error {
		if c := checks[name]; c != nil {
			<-c.done
		}
		return dr.driftOne(ctx, name, checks[name])
	})
	<-checked
	// A component checked but never judged (behind a failure, interrupted)
	// still holds a running component run: settle it with the walk's reason.
	for name, vr := range wr.Vertices {
		c := checks[name]
		if c == nil || (vr.Status != dag.Skipped && vr.Status != dag.Waiting && vr.Status != dag.Canceled) {
			continue
		}
		st, cause, code, reason := dr.s.defaultSettle(name, vr)
		dr.s.setCode(c.step.cr, st, cause, code, reason)
		c.step.cr.Log = c.step.log.finish(nil)
		_ = dr.s.record(c.step.op, c.step.cr, c.step.storeRun, nil)
	}
	dr.s.settle("drift", wr, dr.s.defaultSettle)
	return denied
}

// judgeDrift has the Judge judge a reconciling drift run's fixes (the
// checks' plans) before any is applied.
func (dr *drifter) judgeDrift(ctx context.Context, g *dag.Graph, checks map[string]*check) error {
	var list []PlannedComponent
	for _, name := range g.Vertices() {
		c := checks[name]
		if c == nil {
			continue
		}
		pc := PlannedComponent{Name: name, Def: dr.s.env.Component(name), Plan: c.plan, Secrets: c.step.secrets}
		pc.Gated = !dr.gate.autoApproved(pc.Def)
		if c.err != nil {
			pc.Unplanned = firstLine(redact(c.err.Error(), c.step.secrets))
		}
		list = append(list, pc)
	}
	return dr.judging.judge(ctx, list)
}

// check is one component's drift check: its plan against reality with the
// inputs it was last applied with, not yet judged.
type check struct {
	step *step
	p    *prepared
	plan *runner.Plan
	err  error
	// done is closed when the check has ended, or will never run; the
	// fields above are final then.
	done    chan struct{}
	started bool // checkAll called its walk function

}

// newChecks makes a check for every live component of g.
func (dr *drifter) newChecks(g *dag.Graph) map[string]*check {
	checks := make(map[string]*check)
	for _, name := range g.Vertices() {
		if live(dr.s.state(name)) {
			checks[name] = &check{step: dr.s.newStep(name, Checking), done: make(chan struct{})}
		}
	}
	return checks
}

// checkAll plans every live component at once, at the run's parallelism,
// and closes each check's done as it ends. A check takes the outputs its
// producers stored when last applied, all known before any check ends, so
// drift costs the slowest single plan rather than the graph's depth;
// driftOne then judges the checks in graph order, where upstream drift and
// reconciling need it.
func (dr *drifter) checkAll(ctx context.Context, checks map[string]*check) {
	flat := dag.New()
	for name, c := range checks {
		flat.Add(name)
		c.step.op = "drift"
	}
	// Every check is recorded running at once, in one transaction: they
	// all start now, only the parallelism queues them, and a commit per
	// check would cost each a store write before its tool could start.
	if err := dr.startedAll(checks); err != nil {
		for _, c := range checks {
			c.err = err
			close(c.done)
		}
		return
	}
	wr := flat.Walk(ctx, dr.s.opts.Parallelism, func(ctx context.Context, name string) error {
		c := checks[name]
		c.started = true // read only after the walk, which waits for this call
		defer close(c.done)
		defer func() {
			if r := recover(); r != nil {
				c.err = fmt.Errorf("drift check of %s panicked: %v", name, r)
			}
		}()
		if c.p, c.err = c.step.prepare(ctx, true); c.err != nil {
			return nil
		}
		// Drift names the attributes that differ (driftSummary); an
		// in-sync component costs one tool run all the same. Only a
		// reconcile applies (or holds for approval) the plan it makes.
		if c.plan, c.err = c.p.r.Plan(ctx, c.p.rc, c.p.in, dr.checkOptions()); c.err != nil {
			c.err = fmt.Errorf("plan: %w", c.err)
		}
		return nil
	})
	for name, vr := range wr.Vertices {
		if c := checks[name]; !c.started {
			c.err = vr.Err // interrupted before it started
			if c.err == nil {
				c.err = fmt.Errorf("drift check of %s did not run: %s", name, vr.Reason)
			}
			close(c.done)
		}
	}
}

func (dr *drifter) driftOne(ctx context.Context, name string, c *check) error {
	if c == nil {
		st := dr.s.newStep(name, Checking)
		st.op = "drift"
		dr.s.setCode(st.cr, NotApplied, ReasonNeverApplied.Cause(), string(NotApplied), "never applied: knit apply creates it")
		return dr.s.record(st.op, st.cr, nil, nil)
	}
	st, prev := c.step, dr.s.state(name)
	if ups := dr.affectedBy(st.c); len(ups) > 0 {
		// Its own check planned with inputs drift is about to change.
		st.cr.Drift, st.cr.AffectedBy = Affected, ups
		if dr.s.opts.Reconcile && dr.s.opts.Policies[name] != spec.DriftAlert {
			st.force = true
			return dr.applier.converge(ctx, st, nil, nil)
		}
		st.cr.Log = st.log.finish(nil)
		dr.s.setCode(st.cr, Affected, ReasonUpstreamDrifted.Cause(ups...), string(Affected), "takes "+strings.Join(ups, ", ")+", which drift changes")
		return dr.s.record(st.op, st.cr, st.storeRun, &store.ComponentState{Status: stateDrifted, Fingerprint: prev.Fingerprint, Outputs: prev.Outputs})
	}
	if c.err != nil && c.p != nil {
		dr.recheck(ctx, name, c)
	}
	if c.err != nil {
		return st.fail(ctx, c.err)
	}
	plan, p := c.plan, c.p
	st.cr.Plan = plan
	st.cr.Log = st.log.finish(nil)
	if !plan.HasChanges() {
		if plan.Unchecked {
			// Nothing to compare with reality: its dependents are
			// checked against theirs as usual. One status, never
			// "in sync" first.
			st.cr.Drift = Unknown
			dr.s.setCode(st.cr, Unknown, ReasonUnchecked.Cause(), string(Unknown), "its tool cannot check reality (a script without a plan command); its commands and inputs are unchanged")
		} else {
			st.cr.Drift = InSync
			dr.s.set(st.cr, InSync, "")
		}
		return dr.s.record(st.op, st.cr, st.storeRun, &store.ComponentState{Status: stateApplied, Fingerprint: p.fp, Outputs: prev.Outputs})
	}
	st.cr.Drift = Drifted
	if dr.s.opts.Reconcile && dr.s.opts.Policies[name] != spec.DriftAlert {
		return dr.applier.converge(ctx, st, p, plan)
	}
	dr.s.setCode(st.cr, Drifted, ReasonDrifted.Cause(), string(Drifted), driftSummary(plan))
	if err := dr.auditFinding(st.cr); err != nil {
		return st.fail(ctx, err)
	}
	return dr.s.record(st.op, st.cr, st.storeRun, &store.ComponentState{Status: stateDrifted, Fingerprint: prev.Fingerprint, Outputs: prev.Outputs})
}

// checkOptions are a drift check's plan options.
func (dr *drifter) checkOptions() runner.PlanOptions {
	return runner.PlanOptions{Attributes: true, Unsaved: !dr.s.opts.Reconcile, Values: dr.s.opts.Reconcile && dr.s.opts.Judge != nil}
}

// recheck checks name again when its check failed and upstream checks,
// judged (and reconciled) before it, define kinds the cluster does not
// serve (their CRDs were deleted: runner.Plan.Defines): its custom
// resources of those kinds could not be planned, and now are, as known
// after apply (or against the CRDs a reconcile just restored).
func (dr *drifter) recheck(ctx context.Context, name string, c *check) {
	var coming []runner.Kind
	dr.s.mu.Lock()
	for _, up := range dr.s.env.Graph().Ancestors(name) {
		if cr := dr.s.result.Component(up); cr != nil && cr.Plan != nil {
			for _, k := range cr.Plan.Defines {
				k.By = up
				coming = append(coming, k)
			}
		}
	}
	dr.s.mu.Unlock()
	if len(coming) == 0 {
		return
	}
	opts := dr.checkOptions()
	opts.Coming = coming
	if c.plan, c.err = c.p.r.Plan(ctx, c.p.rc, c.p.in, opts); c.err != nil {
		c.err = fmt.Errorf("plan: %w", c.err)
	}
}

// affectedBy lists the upstream outputs this component takes that drift in
// this run would change: outputs a drifted producer's plan changes, or any
// output of a producer that is itself affected.
func (dr *drifter) affectedBy(c *spec.Component) []string {
	var ups []string
	for _, v := range c.Variables {
		ref, ok := spec.ParseValueFrom(v.ValueFrom)
		if !ok {
			continue
		}
		dr.s.mu.Lock()
		up := dr.s.result.Component(ref.Component)
		dr.s.mu.Unlock()
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
func (dr *drifter) auditFinding(cr *ComponentResult) error {
	err := dr.s.e.Store.AppendAudit(dr.s.db, store.AuditEvent{Env: dr.s.env.ID(), Actor: dr.s.opts.Actor, Action: "drift-found",
		Component: cr.Name, Revision: dr.s.run.Revision, RunID: dr.s.run.ID, Detail: driftSummary(cr.Plan), Time: dr.s.e.now()})
	if err != nil {
		return fmt.Errorf("record drift of %s in the audit trail: %w", cr.Name, err)
	}
	return nil
}
