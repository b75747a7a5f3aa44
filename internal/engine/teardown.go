package engine

import (
	"context"
	"errors"
	"fmt"
	"sort"

	"knit.dev/knit/internal/dag"
	"knit.dev/knit/internal/runner"
	"knit.dev/knit/internal/spec"
	"knit.dev/knit/internal/store"
)

// errRefused marks a component the walk must not destroy; what it depends on
// is then kept too (the walker skips it).
var errRefused = errors.New("refused")

// Teardown destroys the environment's components in reverse dependency
// order (with opts.Components: those and everything that depends on them),
// including live components no longer in the file. A component with
// destroyProtection is refused, and so is everything it depends on; the
// rest is destroyed, gated by approval like any change.
func (e *Engine) Teardown(ctx context.Context, env *spec.Environment, opts Options) (*Result, error) {
	return e.Do(ctx, KindTeardown, env, opts)
}

// tornDown is env as a teardown leaves it: with teardown: true, or, for a
// teardown of some components (only), with destroy: true on those and on
// everything that depends on them. A teardown records it as the revision
// it converges to, so that ENV afterwards means what is torn down: a
// destroy that waits for approval is carried on by the apply that follows
// the approval, and no later apply of ENV re-creates what it destroyed.
func tornDown(env *spec.Environment, only []string) *spec.Environment {
	out := *env
	if len(only) == 0 {
		out.Spec.Teardown = true
		// teardown: true destroys every component; destroy: true beside it
		// would make the recorded spec invalid.
		out.Spec.Components = make([]*spec.Component, len(env.Spec.Components))
		for i, c := range env.Spec.Components {
			cp := *c
			cp.Destroy = false
			out.Spec.Components[i] = &cp
		}
		return &out
	}
	if env.Spec.Teardown {
		return env
	}
	doomed := map[string]bool{}
	for _, n := range env.Graph().WithDependents(only).Vertices() {
		doomed[n] = true
	}
	out.Spec.Components = make([]*spec.Component, len(env.Spec.Components))
	for i, c := range env.Spec.Components {
		cp := *c
		cp.Destroy = cp.Destroy || doomed[c.Name]
		out.Spec.Components[i] = &cp
	}
	return &out
}

func (s *session) teardown(ctx context.Context) error {
	g := s.env.Graph()
	for _, c := range s.opts.Components {
		if !g.Has(c) {
			return fmt.Errorf("no component %q in %s", c, s.env.ID())
		}
	}
	if len(s.opts.Components) > 0 {
		g = g.WithDependents(s.opts.Components)
	}
	names := g.Vertices()
	byPlan, err := s.destroyPreviewed()
	if err != nil {
		return err
	}
	s.destroyByPlan = byPlan
	s.destroyAll(ctx, g, s.refusals(names, true), true)
	s.closeChange()
	return nil
}

// refusals says which of names must not be destroyed, and why. In teardown,
// destroyProtection refuses a component and everything it depends on. For
// single components flagged destroy, a component that is not being
// destroyed but depends on one refuses it too.
func (s *session) refusals(names []string, teardown bool) map[string]string {
	g := s.env.Graph()
	in := map[string]bool{}
	for _, n := range names {
		in[n] = true
	}
	states := s.snapshot()
	refused := map[string]string{}
	for _, n := range names {
		c := s.env.Component(n)
		if c.DestroyProtection {
			refused[n] = "destroyProtection is set on this component"
			continue
		}
		if teardown {
			continue
		}
		// A dependent that stays (live now, or applied later in this run) still needs it.
		for _, d := range g.Descendants(n) {
			if in[d] {
				continue
			}
			what := "component"
			if live(states[d]) {
				what = "live component"
			}
			refused[n] = fmt.Sprintf("%s %s depends on it; destroy %s too or remove the dependency", what, d, d)
			break
		}
	}
	// Whatever a kept component depends on must stay as well.
	keptBy := map[string]string{}
	for _, n := range sortedKeys(refused) {
		for _, a := range g.Ancestors(n) {
			if in[a] && refused[a] == "" && keptBy[a] == "" {
				keptBy[a] = n
			}
		}
	}
	for a, by := range keptBy {
		refused[a] = fmt.Sprintf("%s depends on it and is not being destroyed", by)
	}
	return refused
}

func live(st store.ComponentState) bool {
	return st.Status != "" && st.Status != stateDestroyed
}

func sortedKeys(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// destroyAll walks g reversed, destroying each component once everything
// that depends on it is gone. With propose, what a held destroy leaves
// waiting is planned ahead into a change set (proposeChange).
func (s *session) destroyAll(ctx context.Context, g *dag.Graph, refused map[string]string, propose bool) {
	rg := g.Reverse()
	wr := rg.Walk(ctx, s.opts.Parallelism, func(ctx context.Context, name string) error {
		if why, ok := refused[name]; ok {
			cr := s.add(name, Refused)
			s.setCode(cr, Refused, ReasonRefused.Cause(), "refused: "+why, why)
			_ = s.record("destroy", cr, nil, nil)
			return errRefused
		}
		return s.destroyOne(ctx, name)
	})
	if propose {
		s.proposeChange(ctx, rg, wr)
	}
	s.settle("destroy", wr, func(name string, vr dag.VertexResult) (Status, store.Cause, string, string) {
		if why, ok := refused[name]; ok {
			return Refused, ReasonRefused.Cause(), "refused: " + why, why
		}
		return s.defaultSettle(name, vr)
	})
}

// destroyOne destroys one component. One whose autoApprove allows it (or
// the run's auto-approve) is destroyed at once; otherwise its destroy is
// planned, and the plan waits for approval exactly like a create, unless a
// person says yes at the terminal or an approved destroy plan is waiting.
func (s *session) destroyOne(ctx context.Context, name string) error {
	st := s.newStep(name, Destroying)
	st.op = "destroy"
	if !live(s.state(name)) {
		s.setCode(st.cr, Destroyed, ReasonNeverApplied.Cause(), string(Destroyed), "nothing to destroy: never applied")
		return s.record(st.op, st.cr, nil, nil)
	}
	var err error
	if st.storeRun, err = s.started(st.op, st.cr); err != nil {
		return err
	}
	gated := !s.autoApproved(st.c)
	p, err := st.prepare(ctx, gated || s.destroyByPlan)
	if err != nil {
		return st.fail(ctx, err)
	}
	st.digestFP = p.fp
	// In a run judged first, what destroys is the judged destroy plan, or
	// else a destroy plan made now and judged again.
	judgedPlan, judged := s.judgedPlan(name, "")
	if judgedPlan != nil && !judgedPlan.Destroying {
		judgedPlan = nil
	}
	if !gated && !judged && !s.destroyByPlan {
		if err := p.r.Destroy(ctx, p.rc, p.in); err != nil {
			return st.fail(ctx, fmt.Errorf("destroy: %w", err))
		}
		return s.destroyed(st)
	}
	var staleWhy string
	if gated {
		p.fp = destroyFingerprint(p.fp)
		approved, why, err := s.approvedPlan(name, p.fp)
		if err != nil {
			return st.fail(ctx, err)
		}
		staleWhy = why
		if approved != nil {
			err := s.applyDestroy(ctx, st, p, approved.plan, func(err error) error { return s.closeApproval(approved, err) })
			refused := (*errRefusedPlan)(nil)
			if !errors.As(err, &refused) {
				return err
			}
			staleWhy = refused.why // the tool refused it, changing nothing: plan the destroy again
		}
	}
	if judgedPlan != nil {
		err := s.gateAndDestroy(ctx, st, p, judgedPlan, staleWhy, func(err error) error { return s.closeJudged(st, judgedPlan, err) })
		refused := (*errRefusedPlan)(nil)
		if !errors.As(err, &refused) {
			return err
		}
		staleWhy = refused.why
	}
	s.set(st.cr, Planning, s.destroyReason(name))
	plan, err := p.r.Plan(ctx, p.rc, p.in, runner.PlanOptions{Destroy: true, Values: judged})
	if err != nil {
		return st.fail(ctx, fmt.Errorf("plan destroy: %w", err))
	}
	if judged {
		if err := s.judgeAgain(ctx, st, plan); err != nil {
			return err
		}
	}
	return s.gateAndDestroy(ctx, st, p, plan, staleWhy, nil)
}

// gateAndDestroy applies a destroy plan unless it must wait for a person,
// as gateAndApply does for other plans; done is as for applyDestroy.
func (s *session) gateAndDestroy(ctx context.Context, st *step, p *prepared, plan *runner.Plan, staleWhy string, done func(error) error) error {
	st.cr.Plan = plan
	if !plan.HasChanges() {
		return s.destroyed(st)
	}
	if !s.autoApproved(st.c) {
		ok, differs := s.covered(st.c.Name, plan)
		if ok {
			if err := s.auditCovered(st); err != nil {
				return st.fail(ctx, err)
			}
		} else if !s.approved(st.c, plan) {
			return s.hold(st, p, plan, staleWhy, differs)
		}
	}
	return s.applyDestroy(ctx, st, p, plan, done)
}

// applyDestroy applies a destroy plan; done, if set, learns the outcome,
// and when it returns an *errRefusedPlan, so does applyDestroy, having
// recorded nothing.
func (s *session) applyDestroy(ctx context.Context, st *step, p *prepared, plan *runner.Plan, done func(error) error) error {
	st.cr.Plan = plan
	if st.digestFP != "" {
		st.cr.Digest = PlanDigest(st.digestFP, plan) // as the preview of the destroy made it
	}
	s.set(st.cr, Destroying, "")
	_, err := p.r.Apply(ctx, p.rc, plan)
	if done != nil {
		derr := done(err)
		if refused := (*errRefusedPlan)(nil); errors.As(derr, &refused) {
			return derr
		}
		if derr != nil && err == nil {
			return st.fail(ctx, derr)
		}
	} else if err == nil {
		if serr := s.supersedeApproval(st.c.Name); serr != nil {
			return st.fail(ctx, serr)
		}
	}
	if err != nil {
		return st.fail(ctx, fmt.Errorf("destroy: %w", err))
	}
	return s.destroyed(st)
}

// destroyed records a component as gone.
func (s *session) destroyed(st *step) error {
	st.cr.Log = st.log.finish(nil)
	s.set(st.cr, Destroyed, "")
	return s.record(st.op, st.cr, st.storeRun, &store.ComponentState{Status: stateDestroyed})
}

// destroyPreviewed says whether a branch's preview planned env's teardown:
// then each auto-approved component is destroyed by applying a destroy
// plan (not the tool's one-step destroy), so that the run has the plan
// checksum the preview showed and the audit trail can link the two.
func (s *session) destroyPreviewed() (bool, error) {
	if s.kind != KindTeardown {
		return false, nil
	}
	ps, err := s.e.Store.ListPreviews(s.db, store.PreviewFilter{Env: s.env.ID(), Limit: 100})
	if err != nil {
		return false, fmt.Errorf("read the previews of %s: %w", s.env.ID(), err)
	}
	for _, p := range ps {
		if p.Change == store.PreviewDestroy && p.Status == store.PreviewPlanned && p.Checksum != "" {
			return true, nil
		}
	}
	return false, nil
}
