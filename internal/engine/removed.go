package engine

import (
	"context"
	"fmt"
	"sort"

	"knit.dev/knit/internal/spec"
)

// addRemoved finds the components the environment applied that its spec no
// longer has, and adds each to the run's copy of the spec, from its last
// applied definition, flagged to be destroyed: a component removed from the
// file is a destroy like any other, planned, gated and ordered (dependents
// first) as its definition said.
func (s *session) addRemoved(ctx context.Context) error {
	var names []string
	for name, st := range s.states {
		if live(st) && s.env.Component(name) == nil {
			names = append(names, name)
		}
	}
	if len(names) == 0 {
		return nil
	}
	sort.Strings(names)
	ext := *s.env
	ext.Spec.Components = append([]*spec.Component(nil), s.env.Spec.Components...)
	s.removed = map[string]*spec.Environment{}
	byRev := map[int]*spec.Environment{}
	for _, name := range names {
		n := s.states[name].Revision
		old, ok := byRev[n]
		if !ok {
			rev, err := s.e.Store.Revision(ctx, s.env.ID(), n)
			if err != nil {
				return fmt.Errorf("%s was removed from the file; read revision %d, which last applied it: %w", name, n, err)
			}
			if old, err = spec.FromJSON(rev.Spec, rev.Source, rev.Root); err != nil {
				return fmt.Errorf("%s was removed from the file; revision %d: %w", name, n, err)
			}
			if err := s.e.ensureDir(ctx, old.Dir); err != nil {
				return fmt.Errorf("%s was removed from the file; revision %d, which last applied it: %w", name, n, err)
			}
			byRev[n] = old
		}
		def := old.Component(name)
		if def == nil {
			return fmt.Errorf("%s is live but revision %d, which last applied it, has no definition of it: it cannot be destroyed", name, n)
		}
		c := *def
		c.Destroy = true
		ext.Spec.Components = append(ext.Spec.Components, &c)
		s.removed[name] = old
	}
	s.env = &ext
	return nil
}

// defEnv is the environment a component's definition belongs to: an older
// revision for a removed component, whose relative paths resolve there.
func (s *session) defEnv(name string) *spec.Environment {
	if old, ok := s.removed[name]; ok {
		return old
	}
	return s.env
}

// removedReason says why a destroy was planned, for a removed component.
func (s *session) destroyReason(name string) string {
	if _, ok := s.removed[name]; ok {
		if s.kind == KindRollback {
			return "not in the revision rolled back to: will be destroyed"
		}
		return "removed from file: will be destroyed"
	}
	if s.env.Spec.Teardown || s.kind == KindTeardown {
		// A teardown's reason says what caused it (a removed file, in
		// GitOps), which destroy: true would hide.
		if s.opts.Reason != "" {
			return fmt.Sprintf("teardown (%s): will be destroyed", firstLine(s.opts.Reason))
		}
		return "teardown: will be destroyed"
	}
	return "destroy: true: will be destroyed"
}
