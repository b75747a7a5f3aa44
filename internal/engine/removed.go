package engine

import (
	"context"
	"fmt"
	"sort"

	"knit.dev/knit/internal/spec"
)

// removals knows the components a run destroys because its spec no
// longer has them: each with the environment its last definition came
// from, and why a destroy of a component is planned.
type removals struct {
	s    *session
	defs map[string]*spec.Environment
}

// has reports whether name was removed from the file.
func (rm *removals) has(name string) bool {
	_, ok := rm.defs[name]
	return ok
}

// add finds the components the environment applied that its spec no
// longer has, and adds each to the run's copy of the spec, from its last
// applied definition, flagged to be destroyed: a component removed from the
// file is a destroy like any other, planned, gated and ordered (dependents
// first) as its definition said.
func (rm *removals) add(ctx context.Context) error {
	var names []string
	for name, st := range rm.s.states {
		if live(st) && rm.s.env.Component(name) == nil {
			names = append(names, name)
		}
	}
	if len(names) == 0 {
		return nil
	}
	sort.Strings(names)
	ext := *rm.s.env
	ext.Spec.Components = append([]*spec.Component(nil), rm.s.env.Spec.Components...)
	rm.defs = map[string]*spec.Environment{}
	byRev := map[int]*spec.Environment{}
	for _, name := range names {
		n := rm.s.states[name].Revision
		old, ok := byRev[n]
		if !ok {
			rev, err := rm.s.e.Store.Revision(ctx, rm.s.env.ID(), n)
			if err != nil {
				return fmt.Errorf("%s was removed from the file; read revision %d, which last applied it: %w", name, n, err)
			}
			if old, err = spec.FromJSON(rev.Spec, rev.Source, rev.Root); err != nil {
				return fmt.Errorf("%s was removed from the file; revision %d: %w", name, n, err)
			}
			if err := rm.s.e.ensureDir(ctx, old.Dir); err != nil {
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
		rm.defs[name] = old
	}
	rm.s.env = &ext
	return nil
}

// defEnv is the environment a component's definition belongs to: an older
// revision for a removed component, whose relative paths resolve there.
func (rm *removals) defEnv(name string) *spec.Environment {
	if old, ok := rm.defs[name]; ok {
		return old
	}
	return rm.s.env
}

// removedReason says why a destroy was planned, for a removed component.
func (rm *removals) destroyReason(name string) string {
	if _, ok := rm.defs[name]; ok {
		if rm.s.kind == KindRollback {
			return "not in the revision rolled back to: will be destroyed"
		}
		return "removed from file: will be destroyed"
	}
	if rm.s.env.Spec.Teardown || rm.s.kind == KindTeardown {
		// A teardown's reason says what caused it (a removed file, in
		// GitOps), which destroy: true would hide.
		if rm.s.opts.Reason != "" {
			return fmt.Sprintf("teardown (%s): will be destroyed", firstLine(rm.s.opts.Reason))
		}
		return "teardown: will be destroyed"
	}
	return "destroy: true: will be destroyed"
}
