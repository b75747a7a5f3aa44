package engine

import (
	"context"
	"errors"
	"fmt"

	"knit.dev/knit/internal/runner"
	"knit.dev/knit/internal/spec"
	"knit.dev/knit/internal/store"
)

// Plan computes what Apply would change, for every selected component,
// without changing anything. Components take their inputs from what their
// producers' plans say they will output; one whose input is known only after
// a producer is applied is reported as such.
func (e *Engine) Plan(ctx context.Context, env *spec.Environment, opts Options) (*Result, error) {
	return e.Do(ctx, KindPlan, env, opts)
}

func (s *session) plan(ctx context.Context) error {
	s.planned = map[string]*runner.Plan{}
	if err := s.walkSelected(ctx, "plan", s.planOne); err != nil {
		return err
	}
	if s.opts.Judge != nil && ctx.Err() == nil {
		if err := s.judgeResult(ctx); err != nil {
			return err
		}
	}
	// A plan of what ENV is applied at shows the change set waiting for a
	// decision, if any, with the checksum that decides it.
	if s.run.Revision == 0 {
		return nil
	}
	sets, err := s.e.Store.ListChangeSets(s.db, store.ChangeSetFilter{Env: s.env.ID(), Statuses: []string{store.ChangeSetPending}, Limit: 1})
	if err != nil {
		return fmt.Errorf("read the waiting change set: %w", err)
	}
	if len(sets) == 1 {
		s.result.ChangeSet = &sets[0]
	}
	return nil
}

func (s *session) planOne(ctx context.Context, name string) error {
	st := s.newStep(name, Planning)
	st.op = "plan"
	// Only a component with an open approval needs its fingerprint: to
	// tell whether this plan outdates the approved one.
	p, err := st.prepare(ctx, s.hasOpen(name) || s.opts.Preview)
	var missing *missingOutputError
	if errors.As(err, &missing) {
		s.setCode(st.cr, Deferred, ReasonKnownAfterApply.Cause(missing.Producer+"."+missing.Output), fmt.Sprintf("known after apply: upstream %s.%s", missing.Producer, missing.Output),
			fmt.Sprintf("input %s comes from %s.%s, known only after %s is applied",
				missing.Variable, missing.Producer, missing.Output, missing.Producer))
		return s.record(st.op, st.cr, nil, nil)
	}
	if err != nil {
		return st.fail(ctx, err)
	}
	destroying := st.c.Destroy || s.env.Spec.Teardown
	if s.opts.Preview && !destroying {
		// As an apply would: nothing changed since it was applied.
		if prev := s.state(name); prev.Status == stateApplied && prev.Fingerprint == p.fp {
			s.set(st.cr, UpToDate, "")
			st.cr.Log = st.log.finish(nil)
			return s.record(st.op, st.cr, nil, nil)
		}
	}
	if s.opts.Preview && !s.opts.PreviewScripts && !destroying && st.c.Type == spec.TypeScript && st.c.Script != nil && st.c.Script.Plan != "" {
		// A branch nobody reviewed runs no command of its own unless
		// knit serve's git.previewScripts says so.
		s.setCode(st.cr, Deferred, store.Cause{}, "not planned: script plan commands of unreviewed branches do not run",
			fmt.Sprintf("%s's plan command was not run: a preview runs the plan commands of script components only with knit serve --preview-scripts (git.previewScripts: true)", name))
		st.cr.Log = st.log.finish(nil)
		return s.record(st.op, st.cr, nil, nil)
	}
	rc, in := p.rc, p.in
	if s.opts.Preview {
		if rc.WorkDir, err = s.previewDir(name, rc.WorkDir); err != nil {
			return st.fail(ctx, err)
		}
	}
	if s.opts.Preview && s.opts.Sandbox != nil {
		// Unreviewed code gets no secret: its sensitive inputs are
		// placeholders, and its commands run confined.
		rc.Sandbox = s.opts.Sandbox
		in, st.cr.Placeholders = withPlaceholders(in, rc.Sensitive)
	}
	if p.fp != "" && !s.opts.Preview {
		fp := p.fp
		if destroying {
			fp = destroyFingerprint(fp)
		}
		if err := s.outdateApproval(name, fp); err != nil {
			return st.fail(ctx, err)
		}
	}
	// A plan is read by a person (attribute names) and feeds the plans of
	// dependents (known output values).
	plan, err := p.r.Plan(ctx, rc, in, runner.PlanOptions{Destroy: destroying, Attributes: true, KnownOutputs: !destroying, Values: s.opts.Judge != nil})
	if err != nil {
		return st.fail(ctx, fmt.Errorf("plan: %w", err))
	}
	st.cr.Plan = plan
	if s.opts.Preview {
		st.cr.Digest = PlanDigest(p.fp, plan)
	}
	s.mu.Lock()
	if !destroying {
		s.planned[name] = plan
	}
	if s.opts.Judge != nil {
		if s.secrets == nil {
			s.secrets = map[string][]string{}
		}
		s.secrets[name] = st.secrets
	}
	s.mu.Unlock()
	st.cr.Log = st.log.finish(sensitiveOutputs(plan.PlannedOutputs))
	switch {
	case destroying && plan.HasChanges():
		s.setCode(st.cr, Planned, store.Cause{}, "planned: destroy", s.destroyReason(name))
	case plan.HasChanges():
		s.set(st.cr, Planned, "")
	default:
		s.set(st.cr, NoChanges, "")
	}
	return s.record(st.op, st.cr, nil, nil)
}
