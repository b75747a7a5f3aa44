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

// destroyer destroys components, dependents first: each refused (destroy
// protection, a dependent that stays), destroyed at once, or destroyed by
// a plan gated like any change. An apply destroys what its spec flags or
// no longer has through it; a teardown destroys everything through it.
type destroyer struct {
	s         *session
	gate      *gate
	approvals *approvals
	judging   *judging
	changes   *changes
	// byPlan: every component is destroyed by a destroy plan, as a
	// preview of the teardown planned (destroyPreviewed).
	byPlan bool
}

func newDestroyer(s *session) *destroyer {
	return &destroyer{s: s, gate: s.gate, approvals: s.approvals, judging: s.judging, changes: s.changes}
}

// teardown is a teardown run's walk: the selected components and what
// depends on them, destroyed in reverse dependency order (destroyer).
type teardown struct {
	s         *session
	destroyer *destroyer
	changes   *changes
}

func newTeardown(s *session) *teardown {
	return &teardown{s: s, destroyer: newDestroyer(s), changes: s.changes}
}

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

func (td *teardown) teardown(ctx context.Context) error {
	g := td.s.env.Graph()
	for _, c := range td.s.opts.Components {
		if !g.Has(c) {
			return fmt.Errorf("no component %q in %s", c, td.s.env.ID())
		}
	}
	if len(td.s.opts.Components) > 0 {
		g = g.WithDependents(td.s.opts.Components)
	}
	names := g.Vertices()
	byPlan, err := td.destroyPreviewed()
	if err != nil {
		return err
	}
	td.destroyer.byPlan = byPlan
	td.destroyer.destroyAll(ctx, g, td.destroyer.refusals(names, true), true)
	td.changes.closeChange()
	return nil
}

// refusals says which of names must not be destroyed, and why. In teardown,
// destroyProtection refuses a component and everything it depends on. For
// single components flagged destroy, a component that is not being
// destroyed but depends on one refuses it too.
func (ds *destroyer) refusals(names []string, teardown bool) map[string]string {
	g := ds.s.env.Graph()
	in := map[string]bool{}
	for _, n := range names {
		in[n] = true
	}
	states := ds.s.snapshot()
	refused := map[string]string{}
	for _, n := range names {
		c := ds.s.env.Component(n)
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
func (ds *destroyer) destroyAll(ctx context.Context, g *dag.Graph, refused map[string]string, propose bool) {
	rg := g.Reverse()
	wr := rg.Walk(ctx, ds.s.opts.Parallelism, func(ctx context.Context, name string) error {
		if why, ok := refused[name]; ok {
			cr := ds.s.add(name, Refused)
			ds.s.setCode(cr, Refused, ReasonRefused.Cause(), "refused: "+why, why)
			_ = ds.s.record("destroy", cr, nil, nil)
			return errRefused
		}
		return ds.destroyOne(ctx, name)
	})
	if propose {
		ds.changes.proposeChange(ctx, rg, wr)
	}
	ds.s.settle("destroy", wr, func(name string, vr dag.VertexResult) (Status, store.Cause, string, string) {
		if why, ok := refused[name]; ok {
			return Refused, ReasonRefused.Cause(), "refused: " + why, why
		}
		return ds.s.defaultSettle(name, vr)
	})
}

// destroyOne destroys one component. One whose autoApprove allows it (or
// the run's auto-approve) is destroyed at once; otherwise its destroy is
// planned, and the plan waits for approval exactly like a create, unless a
// person says yes at the terminal or an approved destroy plan is waiting.
func (ds *destroyer) destroyOne(ctx context.Context, name string) error {
	st := ds.s.newStep(name, Destroying)
	st.op = "destroy"
	if !live(ds.s.state(name)) {
		ds.s.setCode(st.cr, Destroyed, ReasonNeverApplied.Cause(), string(Destroyed), "nothing to destroy: never applied")
		return ds.s.record(st.op, st.cr, nil, nil)
	}
	var err error
	if st.storeRun, err = ds.s.started(st.op, st.cr); err != nil {
		return err
	}
	gated := !ds.gate.autoApproved(st.c)
	p, err := st.prepare(ctx, gated || ds.byPlan)
	if err != nil {
		return st.fail(ctx, err)
	}
	st.digestFP = p.fp
	// In a run judged first, what destroys is the judged destroy plan, or
	// else a destroy plan made now and judged again.
	judgedPlan, judged := ds.judging.judgedPlan(name, "")
	if judgedPlan != nil && !judgedPlan.Destroying {
		judgedPlan = nil
	}
	if !gated && !judged && !ds.byPlan {
		if err := p.r.Destroy(ctx, p.rc, p.in); err != nil {
			return st.fail(ctx, fmt.Errorf("destroy: %w", err))
		}
		return ds.destroyed(st)
	}
	var staleWhy string
	if gated {
		var done bool
		if staleWhy, done, err = ds.destroyApproved(ctx, st, p); done {
			return err
		}
	}
	if judgedPlan != nil {
		err := ds.gateAndDestroy(ctx, st, p, judgedPlan, staleWhy, func(err error) error { return ds.judging.closeJudged(st, judgedPlan, err) })
		refused := (*errRefusedPlan)(nil)
		if !errors.As(err, &refused) {
			return err
		}
		staleWhy = refused.why
	}
	ds.s.set(st.cr, Planning, ds.s.removed.destroyReason(name))
	plan, err := p.r.Plan(ctx, p.rc, p.in, runner.PlanOptions{Destroy: true, Values: judged})
	if err != nil {
		return st.fail(ctx, fmt.Errorf("plan destroy: %w", err))
	}
	if judged {
		if err := ds.judging.judgeAgain(ctx, st, plan); err != nil {
			return err
		}
	}
	return ds.gateAndDestroy(ctx, st, p, plan, staleWhy, nil)
}

// destroyApproved applies the component's approved destroy plan, if one
// still matches (p's fingerprint becomes a destroy's); done says the turn
// ended. Otherwise staleWhy says why an approved plan was not applied.
func (ds *destroyer) destroyApproved(ctx context.Context, st *step, p *prepared) (staleWhy string, done bool, err error) {
	p.fp = destroyFingerprint(p.fp)
	approved, staleWhy, err := ds.approvals.approvedPlan(st.c.Name, p.fp)
	if err != nil {
		return "", true, st.fail(ctx, err)
	}
	if approved == nil {
		return staleWhy, false, nil
	}
	err = ds.applyDestroy(ctx, st, p, approved.plan, func(err error) error { return ds.approvals.closeApproval(approved, err) })
	refused := (*errRefusedPlan)(nil)
	if !errors.As(err, &refused) {
		return "", true, err
	}
	return refused.why, false, nil // the tool refused it, changing nothing: plan the destroy again
}

// gateAndDestroy applies a destroy plan unless it must wait for a person,
// as gateAndApply does for other plans; done is as for applyDestroy.
func (ds *destroyer) gateAndDestroy(ctx context.Context, st *step, p *prepared, plan *runner.Plan, staleWhy string, done func(error) error) error {
	st.cr.Plan = plan
	if !plan.HasChanges() {
		return ds.destroyed(st)
	}
	if !ds.gate.autoApproved(st.c) {
		ok, differs := ds.changes.covered(st.c.Name, plan)
		if ok {
			if err := ds.changes.auditCovered(st); err != nil {
				return st.fail(ctx, err)
			}
		} else if !ds.gate.approved(st.c, plan) {
			return ds.gate.hold(st, p, plan, staleWhy, differs)
		}
	}
	return ds.applyDestroy(ctx, st, p, plan, done)
}

// applyDestroy applies a destroy plan; done, if set, learns the outcome,
// and when it returns an *errRefusedPlan, so does applyDestroy, having
// recorded nothing.
func (ds *destroyer) applyDestroy(ctx context.Context, st *step, p *prepared, plan *runner.Plan, done func(error) error) error {
	st.cr.Plan = plan
	if st.digestFP != "" {
		st.cr.Digest = PlanDigest(st.digestFP, plan) // as the preview of the destroy made it
	}
	ds.s.set(st.cr, Destroying, "")
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
		if serr := ds.approvals.supersedeApproval(st.c.Name); serr != nil {
			return st.fail(ctx, serr)
		}
	}
	if err != nil {
		return st.fail(ctx, fmt.Errorf("destroy: %w", err))
	}
	return ds.destroyed(st)
}

// destroyed records a component as gone.
func (ds *destroyer) destroyed(st *step) error {
	st.cr.Log = st.log.finish(nil)
	ds.s.set(st.cr, Destroyed, "")
	return ds.s.record(st.op, st.cr, st.storeRun, &store.ComponentState{Status: stateDestroyed})
}

// destroyPreviewed says whether a branch's preview planned env's teardown:
// then each auto-approved component is destroyed by applying a destroy
// plan (not the tool's one-step destroy), so that the run has the plan
// checksum the preview showed and the audit trail can link the two.
func (td *teardown) destroyPreviewed() (bool, error) {
	if td.s.kind != KindTeardown {
		return false, nil
	}
	ps, err := td.s.e.Store.ListPreviews(td.s.db, store.PreviewFilter{Env: td.s.env.ID(), Limit: 100})
	if err != nil {
		return false, fmt.Errorf("read the previews of %s: %w", td.s.env.ID(), err)
	}
	for _, p := range ps {
		if p.Change == store.PreviewDestroy && p.Status == store.PreviewPlanned && p.Checksum != "" {
			return true, nil
		}
	}
	return false, nil
}
