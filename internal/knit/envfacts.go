package knit

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"maps"
	"slices"
	"strings"

	"knit.dev/knit/internal/gitsource"
	"knit.dev/knit/internal/regsource"
	"knit.dev/knit/internal/spec"
)

// The facts a diff compares: each field of a resolved spec as a path and a
// value, marked sensitive when the module declares it so or its name (or a
// key inside it) says it holds a credential.

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
	rolloutFacts(&f, s)
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
	declared := e.SensitiveVariables(c, spec.Options{Fetched: gitsource.InDataDir(k.cfg.DataDir).Fetched,
		FetchedRegistry: regsource.InDataDir(k.cfg.DataDir).Fetched})
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
	healthFacts(&f, "health", c.Health)
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
