package engine

import (
	"context"
	"fmt"

	"knit.dev/knit/internal/dag"
	"knit.dev/knit/internal/store"
)

// settle records the components the walk never ran (skipped behind a
// failure, waiting behind an approval, interrupted) so the store shows them.
func (s *session) settle(op string, wr *dag.WalkResult, reasonFor func(name string, vr dag.VertexResult) (Status, store.Cause, string, string)) {
	for name, vr := range wr.Vertices {
		if cr := s.result.Component(name); cr != nil {
			s.settleBroken(op, cr, vr)
			continue
		}
		st, cause, code, reason := reasonFor(name, vr)
		cr := s.add(name, st)
		s.setCode(cr, st, cause, code, reason)
		_ = s.record(op, cr, nil, nil)
	}
}

// settleBroken fails a component whose step ended without a final status:
// it panicked (the walker recovered it). The run fails with the message.
func (s *session) settleBroken(op string, cr *ComponentResult, vr dag.VertexResult) {
	s.mu.Lock()
	done := cr.Status.IsTerminal()
	s.mu.Unlock()
	if done || vr.Status != dag.Failed || vr.Err == nil {
		return
	}
	s.runFailed(fmt.Errorf("%s: %w", cr.Name, vr.Err))
	s.setCode(cr, Failed, ReasonRecordFailed.Cause(), "failed: "+firstLine(vr.Err.Error()), vr.Err.Error())
	_ = s.record(op, cr, nil, nil)
}

// causeOf is the named component's cause so far, read under the
// session's lock: a walk that plans ahead settles components while
// others are added and set.
func (s *session) causeOf(name string) (store.Cause, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if c := s.result.Component(name); c != nil {
		return c.Cause, true
	}
	return store.Cause{}, false
}

// defaultSettle says, for machines and people, why a component never ran:
// from the walk's blocking vertex, never from its sentence.
func (s *session) defaultSettle(_ string, vr dag.VertexResult) (Status, store.Cause, string, string) {
	switch vr.Status {
	case dag.Waiting:
		held := vr.Blocker
		if cause, ok := s.causeOf(held); ok && cause.ReasonCode == string(ReasonUpstreamEnvironmentNotReady) {
			return Waiting, cause, "waiting: upstream " + held + " waits for another environment",
				fmt.Sprintf("waiting: %s waits for %s", held, cause.Upstream)
		}
		if s.kind == KindTeardown {
			// The walk is reversed: what holds a component back is a
			// dependent, whose destroy awaits approval.
			return Waiting, ReasonDependentAwaitingApproval.Cause(held), fmt.Sprintf("waiting: dependent %s awaiting approval", held),
				fmt.Sprintf("waiting: dependent %s awaiting approval by an operator", held)
		}
		return Waiting, ReasonUpstreamAwaitingApproval.Cause(held), fmt.Sprintf("waiting: upstream %s awaiting approval", held),
			fmt.Sprintf("waiting: %s awaiting approval by an operator", held)
	case dag.Canceled:
		return Canceled, ReasonInterrupted.Cause(), "interrupted: before it started", "interrupted before it started"
	default:
		failed := vr.Blocker
		if failed == "" { // a cycle: the walk ran nothing
			return Skipped, ReasonDependencyCycle.Cause(), "skipped: " + vr.Reason, "skipped: " + vr.Reason
		}
		return Skipped, ReasonUpstreamFailed.Cause(failed), fmt.Sprintf("skipped: upstream %s failed", failed), fmt.Sprintf("skipped: %s failed", failed)
	}
}

// walkSelected runs fn for every selected component along the graph,
// preparing new ones ahead (prepareAhead), and records the ones the walk
// never ran (skipped, waiting, interrupted).
func (s *session) walkSelected(ctx context.Context, op string, fn func(context.Context, string) error) error {
	g, err := s.selected()
	if err != nil {
		return err
	}
	s.settle(op, g.WalkAhead(ctx, s.opts.Parallelism, s.prepareAhead, fn), s.defaultSettle)
	return nil
}

// selected returns the environment's graph limited to opts.Components and
// what they depend on, then to the components selectiveReconcile picks;
// unknown names are an error.
func (s *session) selected() (*dag.Graph, error) {
	g := s.env.Graph()
	for _, c := range s.opts.Components {
		if !g.Has(c) {
			return nil, fmt.Errorf("no component %q in %s", c, s.env.ID())
		}
	}
	if len(s.opts.Components) > 0 {
		g = g.WithDependencies(s.opts.Components)
	}
	sr := s.env.Spec.SelectiveReconcile
	if sr == nil || sr.TagName == "" {
		return g, nil
	}
	var keep []string
	for _, name := range g.Vertices() {
		// skipMode leaves the tagged components alone; otherwise only they run.
		if s.env.Component(name).HasTag(sr.TagName, sr.TagValues) != sr.SkipMode {
			keep = append(keep, name)
		}
	}
	return g.Subgraph(keep), nil
}
