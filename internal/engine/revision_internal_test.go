package engine

import (
	"context"
	"errors"
	"path/filepath"
	"testing"

	"knit.dev/knit/internal/store"
)

// TestRevisionsAnApplyRecordsOneAPlanNone: an apply records the spec it
// converges to, applied only once markApplied says so; a plan of a spec
// never applied names no revision.
func TestRevisionsAnApplyRecordsOneAPlanNone(t *testing.T) {
	ctx := context.Background()
	e, _ := testEngine(t)
	env := parseEnv(t, pair)
	s := began(t, e, env, KindApply, Options{})
	if s.run.Revision != 1 || s.revisions.convergesTo != 1 {
		t.Fatalf("revision %d, converges to %d: want 1", s.run.Revision, s.revisions.convergesTo)
	}
	if rec, err := e.Store.Environment(ctx, env.ID()); err != nil || rec.AppliedRevision != 0 {
		t.Fatalf("before markApplied: %+v, %v: want nothing applied", rec, err)
	}
	if err := s.revisions.markApplied(); err != nil {
		t.Fatal(err)
	}
	if rec, err := e.Store.Environment(ctx, env.ID()); err != nil || rec.AppliedRevision != 1 {
		t.Errorf("after markApplied: %+v, %v: want revision 1 applied", rec, err)
	}
	if got := s.revisions.origin(); !filepath.IsAbs(got) {
		t.Errorf("origin %q is not absolute", got)
	}

	e2, _ := testEngine(t)
	p := began(t, e2, env, KindPlan, Options{})
	if p.run.Revision != 0 || p.revisions.convergesTo != 0 {
		t.Errorf("a plan of a spec never applied: revision %d, converges to %d", p.run.Revision, p.revisions.convergesTo)
	}
	if _, err := e2.Store.Environment(ctx, env.ID()); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("after a plan, the environment: %v: want none recorded", err)
	}
}
