package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sync"

	"knit.dev/knit/internal/dag"
	"knit.dev/knit/internal/runner"
	"knit.dev/knit/internal/store"
)

// judging applies the environment's policies (the run's Judge) to a run:
// it plans and judges the whole plan before anything applies (judgeFirst),
// judges again a plan made in a component's turn that is not the judged
// one (judgeAgain), judges a plan run's plans (judgeResult), and acts on
// each verdict: decisions kept, published and audited, require_approval
// passed to the gate, a deny stopping the run.
type judging struct {
	s         *session
	gate      *gate
	approvals *approvals
	planned   *planned
	mu        sync.Mutex
	// judged is the plan judgeFirst judged; usable holds, by component,
	// the saved plans it judged that may apply as they are (judgedPlan):
	// any other plan a component's turn makes is judged again
	// (judgeAgain); denied, once such a judgement denies, stops the rest.
	judged []PlannedComponent
	usable map[string]judgedPlan
	denied *PolicyDeniedError
	// secrets are, in a judged plan run, the secrets each planned
	// component was given, which the Judge masks in its input.
	secrets map[string][]string
}

// keepSecrets keeps, in a judged plan run, the secrets name was given.
func (j *judging) keepSecrets(name string, secrets []string) {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.secrets == nil {
		j.secrets = map[string][]string{}
	}
	j.secrets[name] = secrets
}

// judgeFirst, in a run that may change something (apply, teardown),
// plans every selected component before anything applies and has the
// Judge judge the whole plan (see Judge). It changes no resource. A
// component applied from the same inputs is judged as having no changes
// (the run leaves it alone); one waiting with an approval is judged by its
// waiting plan, which stays the one to apply (a new plan would replace the
// saved one a person approved).
func (j *judging) judgeFirst(ctx context.Context) error {
	var g *dag.Graph
	if j.s.kind == KindTeardown {
		g = j.s.env.Graph()
		if len(j.s.opts.Components) > 0 {
			g = g.WithDependents(j.s.opts.Components)
		}
	} else {
		var err error
		if g, err = j.s.selected(); err != nil {
			return err
		}
	}
	j.planned.start()
	j.mu.Lock()
	j.usable = map[string]judgedPlan{}
	j.mu.Unlock()
	// The apply resolves inputs from what its producers really output.
	defer j.planned.stop()
	var mu sync.Mutex
	comps := map[string]PlannedComponent{}
	var errs []error
	wr := g.Walk(ctx, j.s.opts.Parallelism, func(ctx context.Context, name string) error {
		pc, err := j.planForJudge(ctx, name)
		mu.Lock()
		defer mu.Unlock()
		if err != nil {
			errs = append(errs, fmt.Errorf("plan %s for the policies: %w", name, err))
			return err
		}
		comps[name] = pc
		return nil
	})
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if len(errs) > 0 {
		return &PolicyError{Err: joinErrs(errs)}
	}
	list := make([]PlannedComponent, 0, len(comps))
	for _, name := range g.Vertices() {
		if pc, ok := comps[name]; ok {
			list = append(list, pc)
		} else if vr := wr.Vertices[name]; vr.Status != dag.Succeeded {
			return &PolicyError{Err: fmt.Errorf("%s was not planned for the policies: %s", name, vr.Reason)}
		}
	}
	j.judged = list
	return j.judge(ctx, list)
}

// planForJudge plans one component for judgeFirst.
func (j *judging) planForJudge(ctx context.Context, name string) (PlannedComponent, error) {
	c := j.s.env.Component(name)
	removed := j.s.removed.has(name)
	destroying := c.Destroy || j.s.env.Spec.Teardown
	pc := PlannedComponent{Name: name, Def: c, Removed: removed, Gated: !j.gate.autoApproved(c)}
	if destroying && !live(j.s.state(name)) {
		pc.Plan = &runner.Plan{Destroying: true} // nothing to destroy
		return pc, nil
	}
	if a, err := j.approvals.openApproval(name); err != nil || a != nil {
		if err != nil {
			return pc, err
		}
		plan := &runner.Plan{}
		if err := json.Unmarshal(a.Plan, plan); err != nil {
			return pc, fmt.Errorf("approval #%d: stored plan is unreadable: %w", a.ID, err)
		}
		pc.Plan, pc.Gated = plan, true
		return pc, nil
	}
	st := &step{s: j.s, c: c, cr: &ComponentResult{Name: name}, op: "plan"}
	if destroying {
		st.op = "destroy"
	}
	p, err := st.prepareInputs(ctx, !destroying, true)
	pc.Secrets = st.secrets
	if err != nil {
		return pc, err
	}
	defer func() { st.log.finish(nil) }()
	prev := j.s.state(name)
	if !destroying && len(p.unknown) == 0 && !j.s.opts.Refresh && prev.Status == stateApplied && prev.Fingerprint == p.fp {
		pc.Plan = &runner.Plan{} // up to date: the run leaves it alone
		return pc, nil
	}
	opts := runner.PlanOptions{Destroy: destroying, Values: true, KnownOutputs: !destroying && j.s.hasDependents(name),
		Coming: j.planned.coming(j.s.env.Graph(), name)}
	var plan *runner.Plan
	if len(p.unknown) > 0 && !destroying {
		// The plan that applies is made in its turn and judged then.
		plan, pc.Unplanned = st.planPlaceholders(ctx, p, opts)
		if plan == nil {
			return pc, nil
		}
	} else if plan, err = p.r.Plan(ctx, p.rc, p.in, opts); err != nil {
		return pc, fmt.Errorf("plan: %w", err)
	}
	plan.Destroying = destroying
	pc.Plan = plan
	if !destroying {
		j.planned.put(name, plan)
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	if len(p.unknown) == 0 && plan.File != "" {
		j.usable[name] = judgedPlan{plan: plan, fp: p.fp}
	}
	return pc, nil
}

// judgeResult, after a plan run's walk, judges the plans it made.
func (j *judging) judgeResult(ctx context.Context) error {
	var list []PlannedComponent
	j.s.mu.Lock()
	crs := append([]*ComponentResult(nil), j.s.result.Components...)
	j.s.mu.Unlock()
	j.mu.Lock()
	secrets := j.secrets
	j.mu.Unlock()
	for _, cr := range crs {
		c := j.s.env.Component(cr.Name)
		removed := j.s.removed.has(cr.Name)
		pc := PlannedComponent{Name: cr.Name, Def: c, Removed: removed, Plan: cr.Plan, Secrets: secrets[cr.Name]}
		if c != nil {
			pc.Gated = !j.gate.autoApproved(c)
		}
		if cr.Plan == nil {
			pc.Unplanned = cr.Reason
		}
		list = append(list, pc)
	}
	return j.judge(ctx, list)
}

// judge has the Judge judge comps and acts on its verdict: decisions are
// kept in the result, published and audited; require_approval gates the
// components it names; a deny (unless overridden) stops the run.
func (j *judging) judge(ctx context.Context, comps []PlannedComponent) error {
	v, err := j.verdict(ctx, comps)
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return &PolicyError{Err: err}
	}
	j.s.mu.Lock()
	j.s.result.Policy = v
	j.s.mu.Unlock()
	if err := j.announce(v.Decisions, v.Overridden); err != nil {
		return err
	}
	for _, pc := range comps {
		j.requireFor(v, pc.Name, pc.Plan)
	}
	if !v.Denied() {
		return nil
	}
	denials := v.Of(DecisionDeny)
	if j.s.applies() || j.s.kind == KindTeardown {
		j.skipDenied(comps, denials)
	}
	return &PolicyDeniedError{Denials: denials}
}

// verdict is what the Judge decides about comps, a deny marked overridden
// when the run overrides the policies.
func (j *judging) verdict(ctx context.Context, comps []PlannedComponent) (*Verdict, error) {
	v, err := j.s.opts.Judge.Judge(ctx, j.envPlan(comps))
	if err != nil {
		return nil, err
	}
	if v.Denied() && j.s.opts.OverridePolicy != "" {
		v.Overridden = j.s.opts.OverridePolicy
	}
	return v, nil
}

// announce publishes and audits decisions, then the override of a
// denial ("" : none).
func (j *judging) announce(decisions []Decision, overridden string) error {
	for i := range decisions {
		d := decisions[i]
		j.s.publish(Event{Kind: PolicyDecision, Component: d.Component, Decision: &d})
		if err := j.auditDecision("policy-"+d.Kind, d.Component, d.String()); err != nil {
			return err
		}
	}
	if overridden == "" {
		return nil
	}
	return j.auditDecision("policy-override", "", "denial overridden: "+overridden)
}

// requireFor passes to the gate the require_approval decisions of v that
// are about name, whose plan is plan: those naming it, and those naming
// no component when plan changes something.
func (j *judging) requireFor(v *Verdict, name string, plan *runner.Plan) {
	for _, d := range v.Of(DecisionRequireApproval) {
		if d.Component == name || (d.Component == "" && plan.HasChanges()) {
			j.gate.require(name, d.String())
		}
	}
}

// skipDenied records every component of a denied apply or teardown
// skipped, saying which rule denied it, if one names it.
func (j *judging) skipDenied(comps []PlannedComponent, denials []Decision) {
	op := "apply"
	if j.s.kind == KindTeardown {
		op = "destroy"
	}
	for _, pc := range comps {
		why := deniedWhy(denials, pc.Name)
		cr := j.s.add(pc.Name, Skipped)
		cr.Plan = pc.Plan
		j.s.setCode(cr, Skipped, ReasonPolicyDenied.Cause(), firstLine(why), why)
		_ = j.s.record(op, cr, nil, nil)
	}
}

// deniedWhy says why name is not run in a denied run: by the first
// denial naming it, or by the run's.
func deniedWhy(denials []Decision, name string) string {
	for _, d := range denials {
		if d.Component == name {
			return "denied by policy: " + d.String()
		}
	}
	return "not run: the run was denied by policy"
}

// envPlan is what the Judge judges of this run with comps.
func (j *judging) envPlan(comps []PlannedComponent) *EnvPlan {
	return &EnvPlan{Env: j.s.env, Components: comps, Run: RunInfo{
		ID: j.s.run.ID, Kind: string(j.s.kind), Actor: j.s.opts.Actor, Reason: j.s.opts.Reason, Source: j.s.opts.Source,
		Time: j.s.run.StartedAt, Revision: j.s.run.Revision, Commit: j.s.opts.Commit, Author: j.s.opts.Author}}
}

// judgedPlan is a saved plan judgeFirst judged, and the fingerprint of
// the inputs it was made from.
type judgedPlan struct {
	plan *runner.Plan
	fp   string
}

// judgedPlan returns, once, the saved plan judgeFirst judged for name if
// it was made from the inputs fp stands for: applied as it is, it is the
// judged plan by construction (the tool applies the saved file, checked
// by its checksum, and refuses it if the state moved since). judged says
// whether the run was judged first at all: if it was and no plan is
// returned, any plan made for name must be judged again (judgeAgain)
// before it applies.
func (j *judging) judgedPlan(name, fp string) (plan *runner.Plan, judged bool) {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.usable == nil {
		return nil, false
	}
	jp, ok := j.usable[name]
	delete(j.usable, name)
	if !ok || jp.fp != fp {
		return nil, true
	}
	return jp.plan, true
}

// judgeAgain, in name's turn, has the Judge judge the whole plan judged
// first with name's plan replaced by plan, the one about to apply, and
// acts on the verdict as judge does, for name: decisions not already kept
// are added, published and audited; require_approval gates it; a deny
// (unless overridden) stops the run before it applies.
func (j *judging) judgeAgain(ctx context.Context, st *step, plan *runner.Plan) error {
	name := st.c.Name
	pc := PlannedComponent{Name: name, Def: st.c, Removed: j.s.removed.has(name), Gated: !j.gate.autoApproved(st.c), Plan: plan, Secrets: st.secrets}
	v, err := j.verdict(ctx, j.withTurn(pc))
	if err != nil {
		if ctx.Err() == nil {
			err = &PolicyError{Err: err}
			j.s.runFailed(err)
		}
		return st.fail(ctx, err)
	}
	fresh, overridden := j.keep(v)
	j.requireFor(v, name, plan)
	if err := j.announce(fresh, overridden); err != nil {
		return st.fail(ctx, err)
	}
	if !v.Denied() {
		return nil
	}
	return j.deny(st, plan, &PolicyDeniedError{Denials: v.Of(DecisionDeny)})
}

// withTurn is the plan judged first with pc's part replaced by pc (or
// added).
func (j *judging) withTurn(pc PlannedComponent) []PlannedComponent {
	j.mu.Lock()
	list := slices.Clone(j.judged)
	j.mu.Unlock()
	if i := slices.IndexFunc(list, func(c PlannedComponent) bool { return c.Name == pc.Name }); i >= 0 {
		list[i] = pc
	} else {
		list = append(list, pc)
	}
	return list
}

// keep adds to the run's verdict the decisions of v it does not hold
// yet, returning those, and v's override if it is the first.
func (j *judging) keep(v *Verdict) (fresh []Decision, overridden string) {
	j.s.mu.Lock()
	defer j.s.mu.Unlock()
	kept := j.s.result.Policy
	if kept == nil {
		kept = &Verdict{}
		j.s.result.Policy = kept
	}
	for _, d := range v.Decisions {
		if !slices.Contains(kept.Decisions, d) {
			kept.Decisions = append(kept.Decisions, d)
			fresh = append(fresh, d)
		}
	}
	if v.Overridden != "" && kept.Overridden == "" {
		kept.Overridden, overridden = v.Overridden, v.Overridden
	}
	return fresh, overridden
}

// deny stops the run at st's turn, denied: the first denial fails the
// run, and st's component is skipped with plan, saying why.
func (j *judging) deny(st *step, plan *runner.Plan, denied *PolicyDeniedError) error {
	j.mu.Lock()
	first := j.denied == nil
	if first {
		j.denied = denied
	}
	j.mu.Unlock()
	if first {
		j.s.runFailed(denied)
	}
	why := deniedWhy(denied.Denials, st.c.Name)
	st.cr.Plan = plan
	st.cr.Log = st.log.finish(nil)
	j.s.setCode(st.cr, Skipped, ReasonPolicyDenied.Cause(), firstLine(why), why)
	_ = j.s.record(st.op, st.cr, st.storeRun, nil)
	return denied
}

// deniedAfterJudgeFirst, when a judgement in some component's turn has
// denied the run, skips st's component and says why the run stopped.
func (j *judging) deniedAfterJudgeFirst(st *step) error {
	j.mu.Lock()
	denied := j.denied
	j.mu.Unlock()
	if denied == nil {
		return nil
	}
	why := "not run: the run was denied by policy"
	j.s.setCode(st.cr, Skipped, ReasonPolicyDenied.Cause(), why, why)
	_ = j.s.record(st.op, st.cr, nil, nil)
	return denied
}

// auditDecision records one policy decision in the audit trail.
func (j *judging) auditDecision(action, component, detail string) error {
	err := j.s.e.Store.AppendAudit(j.s.db, store.AuditEvent{Env: j.s.env.ID(), Actor: j.s.opts.Actor, Action: action,
		Component: component, Revision: j.s.run.Revision, RunID: j.s.run.ID, Reason: j.s.opts.Reason, Detail: detail, Time: j.s.e.now()})
	if err != nil {
		return fmt.Errorf("record the policy decision: %w", err)
	}
	return nil
}
