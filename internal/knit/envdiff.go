package knit

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"knit.dev/knit/internal/engine"
	"knit.dev/knit/internal/gitsource"
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
func (k *Knit) DiffEnvironments(ctx context.Context, req EnvDiffRequest) (EnvDiff, error) {
	ea, err := k.ResolveEnv(ctx, req.A)
	if err != nil {
		return EnvDiff{}, err
	}
	eb, err := k.ResolveEnv(ctx, req.B)
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

// fact is one field of a spec as a diff compares it.
type fact struct {
	field     string
	value     any
	sensitive bool
}

// facts collects a spec's fields, leaving out unset ones.
type facts []fact

func (f *facts) add(field string, v any) { f.put(field, v, false) }

func (f *facts) put(field string, v any, sensitive bool) {
	switch x := v.(type) {
	case nil:
		return
	case string:
		if x == "" {
			return
		}
	case []string:
		if len(x) == 0 {
			return
		}
	case int:
		if x == 0 {
			return
		}
	}
	*f = append(*f, fact{field, v, sensitive})
}

// envFacts are the environment-wide fields that change how it runs.
func envFacts(e *spec.Environment) []fact {
	s := e.Spec
	f := facts{{field: "autoApprove", value: s.AutoApprove}}
	if s.Teardown {
		f.add("teardown", true)
	}
	f.add("workspace", s.Workspace)
	if s.Drift != nil {
		f.add("drift.schedule", s.Drift.Schedule)
		f.add("drift.policy", s.Drift.Policy)
	}
	if s.Approval != nil && s.Approval.RequireOtherApprover {
		f.add("approval.requireOtherApprover", true)
	}
	if r := s.SelectiveReconcile; r != nil {
		f.add("selectiveReconcile", map[string]any{"tagName": r.TagName, "tagValues": r.TagValues, "skipMode": r.SkipMode})
	}
	for _, z := range s.ZLocals {
		f.put("zlocals."+z.Name, z.Value, secretName(z.Name))
	}
	kubeFacts(&f, "kubeconfig", s.Kubeconfig)
	return f
}

// componentFacts are c's fields, its variables' sensitivity as its module
// declares it (when the module is on this machine) or as its name says.
func (k *Knit) componentFacts(e *spec.Environment, c *spec.Component) []fact {
	f := facts{}
	f.add("type", c.Type)
	f.add("subtype", c.Subtype)
	if m := c.Module; m != nil {
		f.add("module.source", m.Source)
		f.add("module.name", m.Name)
		f.add("module.path", m.Path)
		f.add("module.version", m.Version)
	}
	if ch := c.Chart; ch != nil {
		for _, p := range [][2]string{{"path", ch.Path}, {"git", ch.Git}, {"ref", ch.Ref}, {"repo", ch.Repo},
			{"name", ch.Name}, {"version", ch.Version}, {"release", ch.Release}, {"namespace", ch.Namespace}, {"timeout", ch.Timeout}} {
			f.add("chart."+p[0], p[1])
		}
		f.add("chart.valuesFiles", ch.ValuesFiles)
		if ch.Wait {
			f.add("chart.wait", true)
		}
		if ch.Test {
			f.add("chart.test", true)
		}
		f.add("chart.maxHistory", ch.MaxHistory)
		flattenValues(&f, "chart.values", ch.Values, false)
	}
	if m := c.Manifests; m != nil {
		f.add("manifests.path", m.Path)
		f.add("manifests.namespace", m.Namespace)
	}
	if s := c.Script; s != nil {
		f.add("script.apply", s.Apply)
		f.add("script.plan", s.Plan)
		f.add("script.destroy", s.Destroy)
	}
	f.add("dependsOn", slices.Sorted(slices.Values(c.DependsOn)))
	auto := e.Spec.AutoApprove
	if c.AutoApprove != nil {
		auto = *c.AutoApprove
	}
	f = append(f, fact{field: "autoApprove", value: auto}, fact{field: "destroyProtection", value: c.DestroyProtection})
	if c.Destroy {
		f.add("destroy", true)
	}
	var tags []string
	for _, t := range c.Tags {
		tags = append(tags, t.Name+"="+t.Value)
	}
	f.add("tags", slices.Sorted(slices.Values(tags)))
	f.add("cronSchedule", c.CronSchedule)
	if c.Drift != nil {
		f.add("drift.schedule", c.Drift.Schedule)
		f.add("drift.policy", c.Drift.Policy)
	}
	if v := c.VariablesFile; v != nil {
		f.add("variablesFile", strings.TrimPrefix(v.Source+"//"+v.Path+refSuffix(v.Ref), "//"))
	}
	for i, o := range c.OverlayFiles {
		f.add(fmt.Sprintf("overlayFiles[%d]", i), strings.TrimPrefix(o.Source+"//"+strings.Join(o.Paths, ",")+refSuffix(o.Ref), "//"))
	}
	for _, o := range c.OverlayData {
		// Inline files may hold anything: compared by digest, never shown.
		sum := sha256.Sum256([]byte(o.Data))
		f.add("overlayData."+o.Name, "sha256:"+hex.EncodeToString(sum[:6]))
	}
	declared := e.SensitiveVariables(c, spec.Options{Fetched: gitsource.InDataDir(k.cfg.DataDir).Fetched})
	for _, v := range c.Variables {
		var val any = v.Value
		if v.ValueFrom != "" {
			val = map[string]any{"valueFrom": v.ValueFrom}
		}
		if val == nil {
			val = map[string]any{"value": nil}
		}
		f.put("variables."+v.Name, val, declared[v.Name] || secretName(v.Name) || secretKeyIn(v.Value))
	}
	for _, s := range c.Secrets {
		f.add("secrets."+s.Name, s.Scope+"/"+s.Key) // a reference, not the secret
	}
	kubeFacts(&f, "kubeconfig", c.Kubeconfig)
	return f
}

func refSuffix(ref string) string {
	if ref == "" {
		return ""
	}
	return "@" + ref
}

// kubeFacts adds cluster access: where it comes from, never a token.
func kubeFacts(f *facts, p string, k *spec.Kubeconfig) {
	if k == nil {
		return
	}
	f.add(p+".path", k.Path)
	f.add(p+".fromEnv", k.FromEnv)
	f.add(p+".context", k.Context)
	f.add(p+".valueFrom", k.ValueFrom)
	for _, kv := range []struct {
		name string
		v    *spec.KubeValue
	}{{"server", k.Server}, {"ca", k.CA}, {"token", k.Token}} {
		if kv.v == nil {
			continue
		}
		if kv.v.ValueFrom != "" {
			f.add(p+"."+kv.name, map[string]any{"valueFrom": kv.v.ValueFrom})
		} else {
			f.put(p+"."+kv.name, kv.v.Value, kv.name == "token")
		}
	}
}

// flattenValues adds a chart's values as one field per leaf (maps are
// walked, lists are leaves), sensitive below a key whose name says so.
func flattenValues(f *facts, p string, v any, sensitive bool) {
	m, ok := v.(map[string]any)
	if !ok {
		if v != nil {
			f.put(p, v, sensitive)
		}
		return
	}
	for _, key := range slices.Sorted(maps.Keys(m)) {
		flattenValues(f, p+"."+key, m[key], sensitive || secretName(key))
	}
}

// secretWords are what a name holding a credential usually contains: such
// a value is masked even when no module declares it sensitive (a chart's
// values, a module knit cannot read, a script's variables).
var secretWords = []string{"password", "passwd", "secret", "token", "privatekey", "private_key", "apikey", "api_key", "credential"}

func secretName(name string) bool {
	n := strings.ToLower(name)
	for _, w := range secretWords {
		if strings.Contains(n, w) {
			return true
		}
	}
	return false
}

// secretKeyIn reports whether a map inside v has a key named like a
// credential: a variable holding {db: {password: …}} is masked whole.
func secretKeyIn(v any) bool {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			if secretName(k) || secretKeyIn(e) {
				return true
			}
		}
	case []any:
		return slices.ContainsFunc(x, secretKeyIn)
	}
	return false
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
