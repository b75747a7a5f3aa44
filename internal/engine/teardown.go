package engine

import (
	"context"
	"errors"
	"fmt"
	"sort"

	"knit.dev/knit/internal/dag"
	"knit.dev/knit/internal/spec"
	"knit.dev/knit/internal/store"
)

// errRefused marks a component the walk must not destroy; what it depends on
// is then kept too (the walker skips it).
var errRefused = errors.New("refused")

// Teardown destroys the environment's components in reverse dependency
// order (with opts.Components: those and everything that depends on them).
// A component with destroyProtection is refused, and so is everything it
// depends on; the rest is destroyed.
func (e *Engine) Teardown(ctx context.Context, env *spec.Environment, opts Options) (*Result, error) {
	s, err := e.begin(ctx, env, "teardown", opts)
	if err != nil {
		return nil, err
	}
	err = s.teardown(ctx)
	s.end(ctx, err)
	s.audit("teardown", err)
	return s.result, err
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
	s.destroyAll(ctx, g, s.refusals(names, true))
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
// that depends on it is gone.
func (s *session) destroyAll(ctx context.Context, g *dag.Graph, refused map[string]string) {
	wr := g.Reverse().Walk(ctx, s.opts.Parallelism, func(ctx context.Context, name string) error {
		if why, ok := refused[name]; ok {
			cr := s.add(name, Refused)
			s.set(cr, Refused, why)
			_ = s.record("destroy", cr, nil, nil)
			return errRefused
		}
		return s.destroyOne(ctx, name)
	})
	s.settle("destroy", wr, func(name string, vr dag.VertexResult) (Status, string) {
		if why, ok := refused[name]; ok {
			return Refused, why
		}
		return defaultSettle(name, vr)
	})
}

func (s *session) destroyOne(ctx context.Context, name string) error {
	c := s.env.Component(name)
	cr := s.add(name, Destroying)
	if !live(s.state(name)) {
		s.set(cr, Destroyed, "nothing to destroy: never applied")
		return s.record("destroy", cr, nil, nil)
	}
	var log logBuffer
	var secrets []string
	storeRun, err := s.started("destroy", cr)
	if err != nil {
		return err
	}
	fail := func(err error) error {
		st := Failed
		if canceled(ctx, err) {
			st = Canceled
		}
		cr.Log = log.Redacted(secrets)
		s.set(cr, st, redact(err.Error(), secrets))
		_ = s.record("destroy", cr, storeRun, nil)
		return err
	}
	r, err := s.e.runnerFor(c)
	if err != nil {
		return fail(err)
	}
	in, secrets, err := resolveInputs(c, s.state)
	if err != nil {
		return fail(err)
	}
	rc, err := s.e.component(s.env, c, &log)
	if err != nil {
		return fail(err)
	}
	if err := r.Destroy(ctx, rc, in); err != nil {
		return fail(fmt.Errorf("destroy: %w", err))
	}
	cr.Log = log.Redacted(secrets)
	s.set(cr, Destroyed, "")
	return s.record("destroy", cr, storeRun, &store.ComponentState{Status: stateDestroyed})
}
