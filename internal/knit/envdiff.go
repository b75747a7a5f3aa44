package knit

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"knit.dev/knit/internal/engine"
	"knit.dev/knit/internal/spec"
	"knit.dev/knit/internal/store"
	"knit.dev/knit/internal/view"
)

// Comparing environments: where Diff shows an environment's file as
// written between two revisions, DiffEnvironments compares two resolved
// specs field by field, so that two environments built from one template
// (or copied by hand) can be compared, and says what making A look like B
// would change. It never shows a sensitive value: a variable its module
// declares sensitive, one whose name says it is a credential, a
// kubeconfig token and a sensitive output are Masked on both sides.

// EnvDiff is view.EnvDiff: the HTTP client decodes it without linking the library.
type EnvDiff = view.EnvDiff

// EnvDiffRequest names the two sides: environment A at revision ARev and
// B at BRev (0: the revision the environment is applied at, or its newest
// when it was never applied). The two may be one environment.
type EnvDiffRequest struct {
	A, B       string
	ARev, BRev int
}

// ParseDiffSide splits "team/env" or "team/env@REV" into the reference
// and the revision (0 when none is given).
func ParseDiffSide(s string) (string, int, error) {
	ref, rev, ok := strings.Cut(s, "@")
	if !ok {
		return s, 0, nil
	}
	n, err := strconv.Atoi(rev)
	if err != nil || n < 1 {
		return "", 0, fmt.Errorf("%q: the revision after @ must be a number from 1 (e.g. %s@3)", s, ref)
	}
	return ref, n, nil
}

// ParseDiffID is ParseDiffSide for adapters that serve other people (the
// API, the dashboard): the environment must be named team/env, never by
// metadata name, so that what a caller is refused never depends on what
// other teams have named their environments.
func ParseDiffID(s string) (string, int, error) {
	ref, rev, err := ParseDiffSide(s)
	if err != nil {
		return "", 0, err
	}
	team, env, ok := strings.Cut(ref, "/")
	if !ok || team == "" || env == "" || strings.Contains(env, "/") {
		return "", 0, fmt.Errorf("%q: name an environment as team/env, with @REV for one revision (shop/prod, shop/dev@3)", s)
	}
	return ref, rev, nil
}

// DiffEnvironments compares req.A with req.B as ctx's caller sees them:
// an environment of a team the caller is not limited to is refused
// (ErrForbidden) whether it exists or not.
func (rs *Records) DiffEnvironments(ctx context.Context, req EnvDiffRequest) (EnvDiff, error) {
	k := rs.k
	ea, err := k.resolveEnv(ctx, req.A)
	if err != nil {
		return EnvDiff{}, err
	}
	eb, err := k.resolveEnv(ctx, req.B)
	if err != nil {
		return EnvDiff{}, err
	}
	a, err := k.diffSide(ctx, ea, req.ARev)
	if err != nil {
		return EnvDiff{}, err
	}
	b, err := k.diffSide(ctx, eb, req.BRev)
	if err != nil {
		return EnvDiff{}, err
	}
	d := EnvDiff{A: a.side, B: b.side, Environment: diffFacts(envFacts(a.env), envFacts(b.env))}
	if ea.ID != eb.ID && a.side.Applied && b.side.Applied {
		// Live outputs differ only between two environments: one
		// environment has one live state, whichever revision is named.
		if a.states, err = k.store.ComponentStates(ctx, ea.ID); err != nil {
			return EnvDiff{}, err
		}
		if b.states, err = k.store.ComponentStates(ctx, eb.ID); err != nil {
			return EnvDiff{}, err
		}
	}
	d.Components = k.diffComponents(a, b)
	d.Same = len(d.Environment) == 0
	for _, c := range d.Components {
		if c.Change != view.ComponentSame || slices.ContainsFunc(c.Outputs, func(o view.OutputDiff) bool { return !o.Same }) {
			d.Same = false
		}
	}
	return d, nil
}

// side is one side of a diff as it is being compared.
type side struct {
	side   view.DiffSide
	env    *spec.Environment
	states map[string]store.ComponentState // live states; nil: not compared
}

// diffSide loads e's spec at rev (0: applied, else newest).
func (k *Knit) diffSide(ctx context.Context, e store.Environment, rev int) (side, error) {
	if rev == 0 {
		rev = e.AppliedRevision
	}
	if rev == 0 {
		rev = e.Revision
	}
	if rev == 0 {
		return side{}, fmt.Errorf("%s has no revision yet: knit plan -f FILE or knit apply -f FILE records one", e.ID)
	}
	env, err := k.revisionSpec(ctx, e.ID, rev)
	if err != nil {
		return side{}, err
	}
	s := side{env: env, side: view.DiffSide{Env: e.ID, Revision: rev, Latest: e.Revision,
		Applied: rev == e.AppliedRevision, Status: engine.EnvLabel(e.Status)}}
	return s, nil
}

// revisionSpec is the parsed spec of revision rev of env (kept, like the
// applied spec: revisions never change).
func (k *Knit) revisionSpec(ctx context.Context, env string, rev int) (*spec.Environment, error) {
	key := revKey{env, rev}
	if s, ok := k.specs.get(key); ok {
		return s, nil
	}
	r, err := k.revision(ctx, env, rev)
	if err != nil {
		return nil, err
	}
	if r.Errors != "" {
		first, _, _ := strings.Cut(r.Errors, "\n")
		return nil, fmt.Errorf("%s revision %d does not validate (%s): name a valid revision with @REV or --from/--to", env, rev, first)
	}
	s, err := spec.FromJSON(r.Spec, r.Source, r.Root)
	if err != nil {
		return nil, fmt.Errorf("%s revision %d: %w", env, rev, err)
	}
	k.specs.put(key, s)
	return s, nil
}

// revision reads revision n of env; an unknown one says which exist.
func (k *Knit) revision(ctx context.Context, env string, n int) (store.Revision, error) {
	r, err := k.store.Revision(ctx, env, n)
	if err != nil {
		return store.Revision{}, fmt.Errorf("%s has no revision %d: %w", env, n, err)
	}
	return r, nil
}

// diffComponents compares every component of a and b, in b's order then
// a's own.
func (k *Knit) diffComponents(a, b side) []view.ComponentDiff {
	byName := func(e *spec.Environment) map[string]*spec.Component {
		m := map[string]*spec.Component{}
		for _, c := range e.Spec.Components {
			m[c.Name] = c
		}
		return m
	}
	ca, cb := byName(a.env), byName(b.env)
	var names []string
	for _, c := range b.env.Spec.Components {
		names = append(names, c.Name)
	}
	for _, c := range a.env.Spec.Components {
		if cb[c.Name] == nil {
			names = append(names, c.Name)
		}
	}
	out := make([]view.ComponentDiff, 0, len(names))
	for _, name := range names {
		x, y := ca[name], cb[name]
		var fa, fb []fact
		if x != nil {
			fa = k.componentFacts(a.env, x)
		}
		if y != nil {
			fb = k.componentFacts(b.env, y)
		}
		d := view.ComponentDiff{Name: name, Fields: diffFacts(fa, fb)}
		switch {
		case x == nil:
			d.Change = view.ComponentAdded
		case y == nil:
			d.Change = view.ComponentRemoved
		case len(d.Fields) > 0:
			d.Change = view.ComponentChanged
		default:
			d.Change = view.ComponentSame
		}
		if x != nil && y != nil && a.states != nil && b.states != nil {
			d.Outputs = diffOutputs(a.states[name], b.states[name])
		}
		out = append(out, d)
	}
	return out
}

// diffFacts lists the fields whose values differ, in b's order then a's
// own; a field sensitive on either side is Masked on both.
func diffFacts(a, b []fact) []view.FieldDiff {
	index := func(fs []fact) map[string]fact {
		m := make(map[string]fact, len(fs))
		for _, f := range fs {
			m[f.field] = f
		}
		return m
	}
	ia, ib := index(a), index(b)
	order := make([]string, 0, len(b)+len(a))
	for _, f := range b {
		order = append(order, f.field)
	}
	for _, f := range a {
		if _, ok := ib[f.field]; !ok {
			order = append(order, f.field)
		}
	}
	out := []view.FieldDiff{}
	for _, field := range order {
		x, inA := ia[field]
		y, inB := ib[field]
		if inA && inB && equalJSON(x.value, y.value) {
			continue
		}
		out = append(out, view.FieldDiff{Field: field, Sides: sides(x.value, y.value, inA, inB, x.sensitive || y.sensitive)})
	}
	return out
}

// sides shows a and b, naming the side that lacks the value, both
// Masked when sensitive.
func sides(a, b any, inA, inB, sensitive bool) view.Sides {
	s := view.Sides{A: a, B: b, Sensitive: sensitive}
	switch {
	case !inA:
		s.Missing = "a"
	case !inB:
		s.Missing = "b"
	}
	if sensitive {
		s.A, s.B = nil, nil
		if inA {
			s.A = Masked
		}
		if inB {
			s.B = Masked
		}
	}
	return s
}

// diffOutputs puts the live outputs of one component on both sides side
// by side, when it is applied on both.
func diffOutputs(a, b store.ComponentState) []view.OutputDiff {
	live := func(s store.ComponentState) bool {
		return s.Status == string(engine.Applied) || s.Status == string(engine.Drifted)
	}
	if !live(a) || !live(b) {
		return nil
	}
	names := map[string]bool{}
	for n := range a.Outputs {
		names[n] = true
	}
	for n := range b.Outputs {
		names[n] = true
	}
	out := []view.OutputDiff{}
	for _, n := range slices.Sorted(maps.Keys(names)) {
		x, inA := a.Outputs[n]
		y, inB := b.Outputs[n]
		out = append(out, view.OutputDiff{Name: n, Same: inA && inB && bytes.Equal(x.Value, y.Value),
			Sides: sides(rawValue(x.Value), rawValue(y.Value), inA, inB, x.Sensitive || y.Sensitive)})
	}
	return out
}

func rawValue(b []byte) any {
	if len(b) == 0 {
		return nil
	}
	return json.RawMessage(b)
}

// equalJSON compares two values as JSON (maps in key order), so that a
// number read as json.Number equals the same number written otherwise.
func equalJSON(a, b any) bool {
	x, errA := json.Marshal(a)
	y, errB := json.Marshal(b)
	return errA == nil && errB == nil && bytes.Equal(x, y)
}
