package engine

import (
	"context"
	"errors"
	"fmt"

	"knit.dev/knit/internal/runner"
	"knit.dev/knit/internal/spec"
)

// Plan computes what Apply would change, for every selected component,
// without changing anything. A component whose inputs come from a component
// that was never applied is reported as known only after apply.
func (e *Engine) Plan(ctx context.Context, env *spec.Environment, opts Options) (*Result, error) {
	s, err := e.begin(ctx, env, "plan", opts)
	if err != nil {
		return nil, err
	}
	err = s.plan(ctx)
	s.end(ctx, err)
	return s.result, err
}

func (s *session) plan(ctx context.Context) error {
	g, err := s.selected()
	if err != nil {
		return err
	}
	wr := g.Walk(ctx, s.opts.Parallelism, s.planOne)
	s.settle("plan", wr, defaultSettle)
	return nil
}

func (s *session) planOne(ctx context.Context, name string) error {
	c := s.env.Component(name)
	cr := s.add(name, Planning)
	var log logBuffer
	var secrets []string
	done := func(st Status, reason string, err error) error {
		if err != nil && canceled(ctx, err) {
			st = Canceled
		}
		cr.Log = log.Redacted(secrets)
		s.set(cr, st, redact(reason, secrets))
		if rerr := s.record("plan", cr, nil, nil); rerr != nil && err == nil {
			return rerr
		}
		return err
	}
	r, err := s.e.runnerFor(c)
	if err != nil {
		return done(Failed, err.Error(), err)
	}
	in, secrets, err := resolveInputs(c, s.state)
	var missing *missingOutputError
	if errors.As(err, &missing) {
		return done(Deferred, fmt.Sprintf("input %s comes from %s.%s, known only after %s is applied",
			missing.Variable, missing.Producer, missing.Output, missing.Producer), nil)
	}
	if err != nil {
		return done(Failed, err.Error(), err)
	}
	rc, err := s.e.component(s.env, c, &log)
	if err != nil {
		return done(Failed, err.Error(), err)
	}
	destroying := c.Destroy || s.env.Spec.Teardown
	p, err := r.Plan(ctx, rc, in, runner.PlanOptions{Destroy: destroying})
	if err != nil {
		err = fmt.Errorf("plan: %w", err)
		return done(Failed, err.Error(), err)
	}
	cr.Plan = p
	if p.HasChanges() {
		return done(Planned, "", nil)
	}
	return done(NoChanges, "", nil)
}
