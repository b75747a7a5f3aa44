package engine

import (
	"context"
	"errors"
	"fmt"

	"knit.dev/knit/internal/runner"
	"knit.dev/knit/internal/spec"
	"knit.dev/knit/internal/store"
)

// planner is a plan run's walk: it plans every selected component along
// the graph, each from what its producers' plans say they will output,
// changing nothing (a preview plans in copies of the work dirs).
type planner struct {
	s         *session
	judging   *judging
	approvals *approvals
	planned   *planned
	previews  *previews
}

func newPlanner(s *session) *planner {
	return &planner{s: s, judging: s.judging, approvals: s.approvals, planned: s.planned, previews: s.previews}
}

// Plan computes what Apply would change, for every selected component,
// without changing anything. Components take their inputs from what their
// producers' plans say they will output; one whose input is known only after
// a producer is applied is reported as such.
func (e *Engine) Plan(ctx context.Context, env *spec.Environment, opts Options) (*Result, error) {
	return e.Do(ctx, KindPlan, env, opts)
}

func (pl *planner) plan(ctx context.Context) error {
	pl.planned.start()
	if err := pl.s.walkSelected(ctx, "plan", pl.planOne); err != nil {
		return err
	}
	if pl.s.opts.Judge != nil && ctx.Err() == nil {
		if err := pl.judging.judgeResult(ctx); err != nil {
			return err
		}
	}
	// A plan of what ENV is applied at shows the change set waiting for a
	// decision, if any, with the checksum that decides it.
	if pl.s.run.Revision == 0 {
		return nil
	}
	sets, err := pl.s.e.Store.ListChangeSets(pl.s.db, store.ChangeSetFilter{Env: pl.s.env.ID(), Statuses: []string{store.ChangeSetPending}, Limit: 1})
	if err != nil {
		return fmt.Errorf("read the waiting change set: %w", err)
	}
	if len(sets) == 1 {
		pl.s.result.ChangeSet = &sets[0]
	}
	return nil
}

func (pl *planner) planOne(ctx context.Context, name string) error {
	st := pl.s.newStep(name, Planning)
	st.op = "plan"
	// Only a component with an open approval needs its fingerprint: to
	// tell whether this plan outdates the approved one.
	p, err := st.prepare(ctx, pl.approvals.hasOpen(name) || pl.s.opts.Preview)
	var missing *missingOutputError
	if errors.As(err, &missing) && pl.s.opts.Preview {
		return pl.previewAhead(ctx, st, missing)
	}
	if errors.As(err, &missing) {
		pl.s.setCode(st.cr, Deferred, ReasonKnownAfterApply.Cause(missing.Producer+"."+missing.Output), fmt.Sprintf("known after apply: upstream %s.%s", missing.Producer, missing.Output),
			fmt.Sprintf("input %s comes from %s.%s, known only after %s is applied",
				missing.Variable, missing.Producer, missing.Output, missing.Producer))
		return pl.s.record(st.op, st.cr, nil, nil)
	}
	if err != nil {
		return st.fail(ctx, err)
	}
	destroying := st.c.Destroy || pl.s.env.Spec.Teardown
	if skipped, err := pl.notPreviewed(st, p, destroying); skipped {
		return err
	}
	rc, in, err := pl.where(st, p)
	if err != nil {
		return st.fail(ctx, err)
	}
	if p.fp != "" && !pl.s.opts.Preview {
		fp := p.fp
		if destroying {
			fp = destroyFingerprint(fp)
		}
		if err := pl.approvals.outdateApproval(name, fp); err != nil {
			return st.fail(ctx, err)
		}
	}
	// A plan is read by a person (attribute names) and feeds the plans of
	// dependents (known output values).
	plan, err := p.r.Plan(ctx, rc, in, runner.PlanOptions{Destroy: destroying, Attributes: true, KnownOutputs: !destroying, Values: pl.s.opts.Judge != nil,
		Coming: pl.planned.coming(pl.s.env.Graph(), name)})
	if err != nil {
		return st.fail(ctx, fmt.Errorf("plan: %w", err))
	}
	return pl.keep(st, p, plan, destroying)
}

// notPreviewed, in a preview, records a component the preview does not
// plan: one up to date, as an apply would find it, or a script whose plan
// command a branch nobody reviewed may not run. skipped says it did.
func (pl *planner) notPreviewed(st *step, p *prepared, destroying bool) (skipped bool, err error) {
	if !pl.s.opts.Preview || destroying {
		return false, nil
	}
	if prev := pl.s.state(st.c.Name); p.fp != "" && prev.Status == stateApplied && prev.Fingerprint == p.fp {
		// As an apply would: nothing changed since it was applied.
		pl.s.set(st.cr, UpToDate, "")
		st.cr.Log = st.log.finish(nil)
		return true, pl.s.record(st.op, st.cr, nil, nil)
	}
	if !pl.s.opts.PreviewScripts && st.c.Type == spec.TypeScript && st.c.Script != nil && st.c.Script.Plan != "" {
		// A branch nobody reviewed runs no command of its own unless
		// knit serve's git.previewScripts says so.
		pl.s.setCode(st.cr, Deferred, store.Cause{}, "not planned: script plan commands of unreviewed branches do not run",
			fmt.Sprintf("%s's plan command was not run: a preview runs the plan commands of script components only with knit serve --preview-scripts (git.previewScripts: true)", st.c.Name))
		st.cr.Log = st.log.finish(nil)
		return true, pl.s.record(st.op, st.cr, nil, nil)
	}
	return false, nil
}

// where is the component and inputs the tool plans: in a preview, a
// copy of the work dir, and in a sandboxed one, confined, with
// placeholders for its sensitive inputs.
func (pl *planner) where(st *step, p *prepared) (runner.Component, runner.Inputs, error) {
	rc, in := p.rc, p.in
	if !pl.s.opts.Preview {
		return rc, in, nil
	}
	var err error
	if rc.WorkDir, err = pl.previews.previewDir(st.c.Name, rc.WorkDir); err != nil {
		return rc, in, err
	}
	if pl.s.opts.Sandbox != nil {
		// Unreviewed code gets no secret: its sensitive inputs are
		// placeholders, and its commands run confined.
		rc.Sandbox = pl.s.opts.Sandbox
		in, st.cr.Placeholders = withPlaceholders(in, rc.Sensitive)
	}
	return rc, in, nil
}

// keep records the component's plan: planned (a destroy, saying why),
// or no changes; its known outputs feed its dependents' plans.
func (pl *planner) keep(st *step, p *prepared, plan *runner.Plan, destroying bool) error {
	name := st.c.Name
	st.cr.Plan = plan
	if pl.s.opts.Preview {
		st.cr.Digest = PlanDigest(p.fp, plan)
	}
	if !destroying {
		pl.planned.put(name, plan)
	}
	if pl.s.opts.Judge != nil {
		pl.judging.keepSecrets(name, st.secrets)
	}
	st.cr.Log = st.log.finish(sensitiveOutputs(plan.PlannedOutputs))
	switch {
	case destroying && plan.HasChanges():
		pl.s.setCode(st.cr, Planned, store.Cause{}, "planned: destroy", pl.s.removed.destroyReason(name))
	case plan.HasChanges():
		pl.s.set(st.cr, Planned, "")
	default:
		pl.s.set(st.cr, NoChanges, "")
	}
	return pl.s.record(st.op, st.cr, nil, nil)
}
