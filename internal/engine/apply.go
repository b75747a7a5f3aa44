package engine

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sort"

	"knit.dev/knit/internal/runner"
	"knit.dev/knit/internal/spec"
	"knit.dev/knit/internal/store"
)

// Component state statuses kept in the store: the component Status words
// (store.ComponentState.Status is a string).
const (
	stateApplied   = string(Applied)
	stateFailed    = string(Failed)
	stateAwaiting  = string(Awaiting)
	stateDrifted   = string(Drifted)
	stateDestroyed = string(Destroyed)
)

// applier is an apply's (and a rollback's) walk: it destroys what is to
// be destroyed, then converges every other selected component along the
// graph: skipped when up to date, otherwise planned, gated and applied.
// A drift run's reconcile converges through it too.
type applier struct {
	s         *session
	gate      *gate
	approvals *approvals
	judging   *judging
	changes   *changes
	destroyer *destroyer
}

func newApplier(s *session) *applier {
	return &applier{s: s, gate: s.gate, approvals: s.approvals, judging: s.judging, changes: s.changes, destroyer: newDestroyer(s)}
}

// Apply brings the environment in line with env and waits for the end:
// components to destroy (flagged destroy, or removed from the file) are
// destroyed first, dependents first and gated like any change, then the
// rest is applied in dependency order, independent components in parallel.
// With spec.teardown it tears down instead. The error is for the run as a
// whole (lock held, store down); component failures are in the result.
func (e *Engine) Apply(ctx context.Context, env *spec.Environment, opts Options) (*Result, error) {
	return e.Do(ctx, KindApply, env, opts)
}

// Do starts a run of kind and waits for its end.
func (e *Engine) Do(ctx context.Context, kind store.RunKind, env *spec.Environment, opts Options) (*Result, error) {
	r, err := e.Start(ctx, kind, env, opts)
	if err != nil {
		return nil, err
	}
	<-r.Done()
	return r.result, r.err
}

func (ap *applier) apply(ctx context.Context) error {
	g, err := ap.s.selected()
	if err != nil {
		return err
	}
	var doomed, keep []string
	for _, name := range g.Vertices() {
		if ap.s.env.Component(name).Destroy {
			doomed = append(doomed, name)
		} else {
			keep = append(keep, name)
		}
	}
	if len(doomed) > 0 {
		ap.destroyer.destroyAll(ctx, g.Subgraph(doomed), ap.destroyer.refusals(doomed, false), false)
	}
	if ctx.Err() != nil {
		return nil
	}
	kept := g.Subgraph(keep)
	wr := kept.WalkAhead(ctx, ap.s.opts.Parallelism, ap.s.prepareAhead, func(ctx context.Context, name string) error {
		return ap.converge(ctx, ap.s.newStep(name, Planning), nil, nil)
	})
	ap.changes.proposeChange(ctx, kept, wr)
	ap.s.settle("apply", wr, ap.s.defaultSettle)
	ap.changes.closeChange()
	return nil
}

// converge makes one component match the spec: skip it when its fingerprint
// is unchanged, apply an approved plan when one is waiting, otherwise plan
// (unless p and plan are given, as drift does), gate on approval, and apply.
func (ap *applier) converge(ctx context.Context, st *step, p *prepared, plan *runner.Plan) error {
	if err := ap.judging.deniedAfterJudgeFirst(st); err != nil {
		return err
	}
	var err error
	if p == nil {
		if p, err = st.prepare(ctx, true); err != nil {
			return st.fail(ctx, err)
		}
	}
	prev := ap.s.state(st.c.Name)
	if plan == nil && !ap.s.opts.Refresh && !st.force && prev.Status == stateApplied && prev.Fingerprint == p.fp {
		ap.s.set(st.cr, UpToDate, "")
		return ap.s.record(st.op, st.cr, nil, nil)
	}
	if st.storeRun == nil {
		if st.storeRun, err = ap.s.started(st.op, st.cr); err != nil {
			return err
		}
	}
	staleWhy, done, err := ap.applyApproved(ctx, st, p, plan == nil)
	if done {
		return err
	}
	// In a run judged first, the plan that applies is the judged one: the
	// saved plan judgeFirst judged, when made from these very inputs, or
	// else a plan made now and judged again before anything applies.
	judgedPlan, judged := ap.judging.judgedPlan(st.c.Name, p.fp)
	again := plan == nil && judged
	if plan == nil && judgedPlan != nil {
		err := ap.gateAndApply(ctx, st, p, judgedPlan, staleWhy, func(err error) error { return ap.judging.closeJudged(st, judgedPlan, err) })
		refused := (*errRefusedPlan)(nil)
		if !errors.As(err, &refused) {
			return err
		}
		staleWhy = refused.why // the tool refused it, changing nothing: plan again, and judge that
	}
	if plan == nil {
		if plan, done, err = ap.freshPlan(ctx, st, p, prev, again); done {
			return err
		}
	}
	if again {
		if err := ap.judging.judgeAgain(ctx, st, plan); err != nil {
			return err
		}
	}
	return ap.gateAndApply(ctx, st, p, plan, staleWhy, nil)
}

// applyApproved applies the component's approved plan, if one still
// matches; done says the turn ended (applied, failed, or held again with
// the plan still waiting from the same inputs, when fresh: no plan was
// given). Otherwise staleWhy says why an approved plan was not applied.
func (ap *applier) applyApproved(ctx context.Context, st *step, p *prepared, fresh bool) (staleWhy string, done bool, err error) {
	approved, staleWhy, err := ap.approvals.approvedPlan(st.c.Name, p.fp)
	if err != nil {
		return "", true, st.fail(ctx, err)
	}
	if approved != nil {
		err := ap.applyPlan(ctx, st, p, approved.plan, func(err error) error { return ap.approvals.closeApproval(approved, err) })
		refused := (*errRefusedPlan)(nil)
		if !errors.As(err, &refused) {
			return "", true, err
		}
		staleWhy = refused.why // the tool refused it, changing nothing: plan again
	}
	if approved == nil && staleWhy == "" && fresh {
		// A plan still waiting from the same inputs stays the one a person
		// reads: a run started for another component (a sibling's
		// approval) leaves it alone.
		if a, err := ap.gate.stillWaiting(st.c, p.fp); err != nil || a != nil {
			if err != nil {
				return "", true, st.fail(ctx, err)
			}
			return "", true, ap.gate.holdAgain(st, a)
		}
	}
	return staleWhy, false, nil
}

// freshPlan plans the component now; one nobody approves (and that need
// not be judged again) is planned and applied in one step where its
// runner can, and then done says the turn ended.
func (ap *applier) freshPlan(ctx context.Context, st *step, p *prepared, prev store.ComponentState, again bool) (plan *runner.Plan, done bool, err error) {
	auto := ap.gate.autoApproved(st.c)
	if auto && !again {
		if pa, ok := p.r.(runner.PlanApplier); ok {
			if err := ap.planApply(ctx, st, p, pa, prev); !errors.Is(err, runner.ErrUnsupported) {
				return nil, true, err
			}
		}
	}
	// The plan lists resources, actions and counts; attribute names
	// and values cost another tool run per changed component, spent
	// only where a person will read them (`knit plan`, drift, and a
	// plan that waits for approval) or a policy judges them.
	// A plan that may wait for a person feeds the plans of what waits
	// behind it, planned ahead for the change set (known output values).
	ahead := !auto && ap.s.hasDependents(st.c.Name)
	if plan, err = p.r.Plan(ctx, p.rc, p.in, runner.PlanOptions{Attributes: !auto, KnownOutputs: ahead, Values: again}); err != nil {
		return nil, true, st.fail(ctx, fmt.Errorf("plan: %w", err))
	}
	return plan, false, nil
}

// gateAndApply applies plan unless it must wait for a person: a plan
// with changes of a component not auto-approved applies when the approved
// change set covers it or a person says yes at the terminal, and waits
// otherwise. done is as for applyPlan.
func (ap *applier) gateAndApply(ctx context.Context, st *step, p *prepared, plan *runner.Plan, staleWhy string, done func(error) error) error {
	st.cr.Plan = plan
	if plan.HasChanges() && !ap.gate.autoApproved(st.c) {
		ok, differs := ap.changes.covered(st.c.Name, plan)
		if ok {
			if err := ap.changes.auditCovered(st); err != nil {
				return st.fail(ctx, err)
			}
			return ap.applyPlan(ctx, st, p, plan, done)
		}
		if !ap.gate.approved(st.c, plan) {
			return ap.gate.hold(st, p, plan, staleWhy, differs)
		}
	}
	return ap.applyPlan(ctx, st, p, plan, done)
}

// closeJudged is what became of applying the judged plan: a plan the tool
// refused as stale (the state moved since it was judged) is an
// *errRefusedPlan, so that the turn plans again and judges that plan; once
// applied, it closes any approval a plan before it waited with.
func (j *judging) closeJudged(st *step, plan *runner.Plan, err error) error {
	if errors.Is(err, runner.ErrStalePlan) {
		return &errRefusedPlan{why: "the plan judged before the run no longer applies: " + firstLine(err.Error())}
	}
	if err == nil && plan.HasChanges() {
		return j.approvals.supersedeApproval(st.c.Name)
	}
	return nil
}

// applyPlan applies plan (or, with no changes, reads outputs) and records
// the component's new state; done, if set, learns the outcome, and when it
// returns an *errRefusedPlan, so does applyPlan, having recorded nothing.
func (ap *applier) applyPlan(ctx context.Context, st *step, p *prepared, plan *runner.Plan, done func(error) error) error {
	st.cr.Plan = plan
	var outs runner.Outputs
	var err error
	if plan.HasChanges() {
		ap.s.set(st.cr, Applying, "")
		outs, err = p.r.Apply(ctx, p.rc, plan)
	} else {
		outs, err = p.r.Outputs(ctx, p.rc)
	}
	if done != nil {
		derr := done(err)
		if refused := (*errRefusedPlan)(nil); errors.As(derr, &refused) {
			return derr
		}
		if derr != nil && err == nil {
			err = derr
		}
	} else if err == nil && plan.HasChanges() {
		err = ap.approvals.supersedeApproval(st.c.Name)
	}
	if err != nil {
		return st.fail(ctx, fmt.Errorf("apply: %w", err))
	}
	return ap.applied(ctx, st, p, plan, outs)
}

// planApply applies a component nobody approves in one step of its runner,
// which reports what changed as its plan would have. The output changes
// are those between the stored outputs and the new ones. ErrUnsupported
// (nothing done) means the runner cannot: plan and apply instead.
func (ap *applier) planApply(ctx context.Context, st *step, p *prepared, pa runner.PlanApplier, prev store.ComponentState) error {
	ap.s.set(st.cr, Applying, "")
	plan, outs, err := pa.PlanApply(ctx, p.rc, p.in)
	if errors.Is(err, runner.ErrUnsupported) {
		return err
	}
	if err != nil {
		return st.fail(ctx, fmt.Errorf("apply: %w", err))
	}
	if len(plan.OutputChanges) == 0 {
		plan.OutputChanges = changedOutputs(prev, outs)
	}
	if plan.HasChanges() {
		if err := ap.approvals.supersedeApproval(st.c.Name); err != nil {
			return st.fail(ctx, fmt.Errorf("apply: %w", err))
		}
	}
	return ap.applied(ctx, st, p, plan, outs)
}

// changedOutputs names the outputs whose value or sensitivity differs
// from the stored state's, or that appeared or went away.
func changedOutputs(prev store.ComponentState, outs runner.Outputs) []string {
	now, err := encodeOutputs(outs)
	if err != nil {
		return nil
	}
	var names []string
	for k, v := range now {
		if o, ok := prev.Outputs[k]; !ok || o.Sensitive != v.Sensitive || !bytes.Equal(o.Value, v.Value) {
			names = append(names, k)
		}
	}
	for k := range prev.Outputs {
		if _, ok := now[k]; !ok {
			names = append(names, k)
		}
	}
	sort.Strings(names)
	return names
}

// applied records a component's new state after its plan was applied
// (or, without changes, its outputs read).
func (ap *applier) applied(ctx context.Context, st *step, p *prepared, plan *runner.Plan, outs runner.Outputs) error {
	st.cr.Plan = plan
	stored, err := encodeOutputs(outs)
	if err != nil {
		return st.fail(ctx, err)
	}
	st.cr.Outputs = outs
	st.cr.Log = st.log.finish(sensitiveOutputs(outs))
	status := Applied
	if !plan.HasChanges() {
		status = NoChanges
	}
	st.cr.Digest = PlanDigest(p.fp, plan)
	ap.s.set(st.cr, status, "")
	return ap.s.record(st.op, st.cr, st.storeRun, &store.ComponentState{Status: stateApplied, Fingerprint: p.fp, Outputs: stored})
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
