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

// judgeFirst, in a run that may change something (apply, teardown),
// plans every selected component before anything applies and has the
// Judge judge the whole plan (see Judge). It changes no resource. A
// component applied from the same inputs is judged as having no changes
// (the run leaves it alone); one waiting with an approval is judged by its
// waiting plan, which stays the one to apply (a new plan would replace the
// saved one a person approved).
func (s *session) judgeFirst(ctx context.Context) error {
	var g *dag.Graph
	if s.kind == KindTeardown {
		g = s.env.Graph()
		if len(s.opts.Components) > 0 {
			g = g.WithDependents(s.opts.Components)
		}
	} else {
		var err error
		if g, err = s.selected(); err != nil {
			return err
		}
	}
	s.mu.Lock()
	s.planned = map[string]*runner.Plan{}
	s.usable = map[string]judgedPlan{}
	s.mu.Unlock()
	defer func() {
		// The apply resolves inputs from what its producers really output.
		s.mu.Lock()
		s.planned = nil
		s.mu.Unlock()
	}()
	var mu sync.Mutex
	comps := map[string]PlannedComponent{}
	var errs []error
	wr := g.Walk(ctx, s.opts.Parallelism, func(ctx context.Context, name string) error {
		pc, err := s.planForJudge(ctx, name)
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
	s.judged = list
	return s.judge(ctx, list)
}

// planForJudge plans one component for judgeFirst.
func (s *session) planForJudge(ctx context.Context, name string) (PlannedComponent, error) {
	c := s.env.Component(name)
	_, removed := s.removed[name]
	destroying := c.Destroy || s.env.Spec.Teardown
	pc := PlannedComponent{Name: name, Def: c, Removed: removed, Gated: !s.autoApproved(c)}
	if destroying && !live(s.state(name)) {
		pc.Plan = &runner.Plan{Destroying: true} // nothing to destroy
		return pc, nil
	}
	if a, err := s.openApproval(name); err != nil || a != nil {
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
	st := &step{s: s, c: c, cr: &ComponentResult{Name: name}, op: "plan"}
	if destroying {
		st.op = "destroy"
	}
	p, err := st.prepareInputs(ctx, !destroying, true)
	pc.Secrets = st.secrets
	if err != nil {
		return pc, err
	}
	defer func() { st.log.finish(nil) }()
	prev := s.state(name)
	if !destroying && len(p.unknown) == 0 && !s.opts.Refresh && prev.Status == stateApplied && prev.Fingerprint == p.fp {
		pc.Plan = &runner.Plan{} // up to date: the run leaves it alone
		return pc, nil
	}
	opts := runner.PlanOptions{Destroy: destroying, Values: true, KnownOutputs: !destroying && s.hasDependents(name)}
	var plan *runner.Plan
	if len(p.unknown) > 0 && !destroying {
		// The plan that applies is made in its turn and judged then.
		plan, pc.Unplanned = s.planPlaceholders(ctx, st, p, opts)
		if plan == nil {
			return pc, nil
		}
	} else if plan, err = p.r.Plan(ctx, p.rc, p.in, opts); err != nil {
		return pc, fmt.Errorf("plan: %w", err)
	}
	plan.Destroying = destroying
	pc.Plan = plan
	s.mu.Lock()
	defer s.mu.Unlock()
	if !destroying {
		s.planned[name] = plan
	}
	if len(p.unknown) == 0 && plan.File != "" {
		s.usable[name] = judgedPlan{plan: plan, fp: p.fp}
	}
	return pc, nil
}

// judgeResult, after a plan run's walk, judges the plans it made.
func (s *session) judgeResult(ctx context.Context) error {
	var list []PlannedComponent
	s.mu.Lock()
	crs := append([]*ComponentResult(nil), s.result.Components...)
	secrets := s.secrets
	s.mu.Unlock()
	for _, cr := range crs {
		c := s.env.Component(cr.Name)
		_, removed := s.removed[cr.Name]
		pc := PlannedComponent{Name: cr.Name, Def: c, Removed: removed, Plan: cr.Plan, Secrets: secrets[cr.Name]}
		if c != nil {
			pc.Gated = !s.autoApproved(c)
		}
		if cr.Plan == nil {
			pc.Unplanned = cr.Reason
		}
		list = append(list, pc)
	}
	return s.judge(ctx, list)
}

// judge has the Judge judge comps and acts on its verdict: decisions are
// kept in the result, published and audited; require_approval gates the
// components it names; a deny (unless overridden) stops the run.
func (s *session) judge(ctx context.Context, comps []PlannedComponent) error {
	v, err := s.opts.Judge.Judge(ctx, s.envPlan(comps))
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return &PolicyError{Err: err}
	}
	if v.Denied() && s.opts.OverridePolicy != "" {
		v.Overridden = s.opts.OverridePolicy
	}
	s.mu.Lock()
	s.result.Policy = v
	s.mu.Unlock()
	for i := range v.Decisions {
		d := v.Decisions[i]
		s.publish(Event{Kind: PolicyDecision, Component: d.Component, Decision: &d})
		if err := s.auditDecision("policy-"+d.Kind, d.Component, d.String()); err != nil {
			return err
		}
	}
	if v.Overridden != "" {
		if err := s.auditDecision("policy-override", "", "denial overridden: "+v.Overridden); err != nil {
			return err
		}
	}
	s.mustApprove = map[string]string{}
	for _, d := range v.Of(DecisionRequireApproval) {
		for _, pc := range comps {
			if d.Component == pc.Name || (d.Component == "" && pc.Plan.HasChanges()) {
				s.mustApprove[pc.Name] = d.String()
			}
		}
	}
	if !v.Denied() {
		return nil
	}
	denials := v.Of(DecisionDeny)
	if s.applies() || s.kind == KindTeardown {
		op := "apply"
		if s.kind == KindTeardown {
			op = "destroy"
		}
		for _, pc := range comps {
			why := "not run: the run was denied by policy"
			for _, d := range denials {
				if d.Component == pc.Name {
					why = "denied by policy: " + d.String()
					break
				}
			}
			cr := s.add(pc.Name, Skipped)
			cr.Plan = pc.Plan
			s.setCode(cr, Skipped, ReasonPolicyDenied.Cause(), firstLine(why), why)
			_ = s.record(op, cr, nil, nil)
		}
	}
	return &PolicyDeniedError{Denials: denials}
}

// envPlan is what the Judge judges of this run with comps.
func (s *session) envPlan(comps []PlannedComponent) *EnvPlan {
	return &EnvPlan{Env: s.env, Components: comps, Run: RunInfo{
		ID: s.run.ID, Kind: string(s.kind), Actor: s.opts.Actor, Reason: s.opts.Reason, Source: s.opts.Source,
		Time: s.run.StartedAt, Revision: s.run.Revision, Commit: s.opts.Commit, Author: s.opts.Author}}
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
func (s *session) judgedPlan(name, fp string) (plan *runner.Plan, judged bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.usable == nil {
		return nil, false
	}
	jp, ok := s.usable[name]
	delete(s.usable, name)
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
func (s *session) judgeAgain(ctx context.Context, st *step, plan *runner.Plan) error {
	name := st.c.Name
	_, removed := s.removed[name]
	pc := PlannedComponent{Name: name, Def: st.c, Removed: removed, Gated: !s.autoApproved(st.c), Plan: plan, Secrets: st.secrets}
	s.mu.Lock()
	list := slices.Clone(s.judged)
	s.mu.Unlock()
	if i := slices.IndexFunc(list, func(c PlannedComponent) bool { return c.Name == name }); i >= 0 {
		list[i] = pc
	} else {
		list = append(list, pc)
	}
	v, err := s.opts.Judge.Judge(ctx, s.envPlan(list))
	if err != nil {
		if ctx.Err() == nil {
			err = &PolicyError{Err: err}
			s.runFailed(err)
		}
		return st.fail(ctx, err)
	}
	if v.Denied() && s.opts.OverridePolicy != "" {
		v.Overridden = s.opts.OverridePolicy
	}
	var fresh []Decision
	s.mu.Lock()
	kept := s.result.Policy
	if kept == nil {
		kept = &Verdict{}
		s.result.Policy = kept
	}
	for _, d := range v.Decisions {
		if !slices.Contains(kept.Decisions, d) {
			kept.Decisions = append(kept.Decisions, d)
			fresh = append(fresh, d)
		}
	}
	override := v.Overridden != "" && kept.Overridden == ""
	if override {
		kept.Overridden = v.Overridden
	}
	for _, d := range v.Of(DecisionRequireApproval) {
		if d.Component == name || (d.Component == "" && plan.HasChanges()) {
			s.mustApprove[name] = d.String()
		}
	}
	s.mu.Unlock()
	for i := range fresh {
		d := fresh[i]
		s.publish(Event{Kind: PolicyDecision, Component: d.Component, Decision: &d})
		if err := s.auditDecision("policy-"+d.Kind, d.Component, d.String()); err != nil {
			return st.fail(ctx, err)
		}
	}
	if override {
		if err := s.auditDecision("policy-override", "", "denial overridden: "+v.Overridden); err != nil {
			return st.fail(ctx, err)
		}
	}
	if !v.Denied() {
		return nil
	}
	denied := &PolicyDeniedError{Denials: v.Of(DecisionDeny)}
	why := "not run: the run was denied by policy"
	for _, d := range denied.Denials {
		if d.Component == name {
			why = "denied by policy: " + d.String()
			break
		}
	}
	s.mu.Lock()
	if s.denied == nil {
		s.denied = denied
		s.errs = append(s.errs, denied)
	}
	s.mu.Unlock()
	st.cr.Plan = plan
	st.cr.Log = st.log.finish(nil)
	s.setCode(st.cr, Skipped, ReasonPolicyDenied.Cause(), firstLine(why), why)
	_ = s.record(st.op, st.cr, st.storeRun, nil)
	return denied
}

// deniedAfterJudgeFirst, when a judgement in some component's turn has
// denied the run, skips st's component and says why the run stopped.
func (s *session) deniedAfterJudgeFirst(st *step) error {
	s.mu.Lock()
	denied := s.denied
	s.mu.Unlock()
	if denied == nil {
		return nil
	}
	why := "not run: the run was denied by policy"
	s.setCode(st.cr, Skipped, ReasonPolicyDenied.Cause(), why, why)
	_ = s.record(st.op, st.cr, nil, nil)
	return denied
}

// auditDecision records one policy decision in the audit trail.
func (s *session) auditDecision(action, component, detail string) error {
	err := s.e.Store.AppendAudit(s.db, store.AuditEvent{Env: s.env.ID(), Actor: s.opts.Actor, Action: action,
		Component: component, Revision: s.run.Revision, RunID: s.run.ID, Reason: s.opts.Reason, Detail: detail, Time: s.e.now()})
	if err != nil {
		return fmt.Errorf("record the policy decision: %w", err)
	}
	return nil
}

// requiredByPolicy is why a policy requires a person to approve name's
// plan ("" if none does).
func (s *session) requiredByPolicy(name string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.mustApprove[name]
}
