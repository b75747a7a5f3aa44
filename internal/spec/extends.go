package spec

import (
	"fmt"
	"path/filepath"
	"sort"
	"strings"

	"knit.dev/knit/internal/diag"
)

// extend reads the Environment file env extends, resolved as it loads on
// its own, takes its settings where env writes none, and returns its
// components.
func extend(env *Environment, chain []string) ([]*layer, diag.Diagnostics) {
	ref := env.Spec.Extends
	fail := func(msg, hint string) ([]*layer, diag.Diagnostics) {
		return nil, diag.Diagnostics{errAt(env, "spec.extends.path", "", msg, hint)}
	}
	if ref.Path == "" {
		return fail("missing required field", "name the environment file this one builds on: path: ./base.yaml")
	}
	self := realPath(filepath.Join(env.Dir, filepath.Base(env.File)))
	chain = append(chain, self)
	if len(chain) > maxExtends {
		return fail(fmt.Sprintf("extends nests more than %d files deep", maxExtends), "build on fewer layers")
	}
	env.opts.noteRead(env.Dir, ref.Path)
	abs, data, sum, err := readSource(env.Root, env.Dir, ref.Path)
	if err != nil {
		return fail("extends: "+err.Error(), "")
	}
	name := displayName(env, abs)
	for i, p := range chain {
		if p == realPath(abs) {
			var names []string
			for _, q := range chain[i:] {
				names = append(names, displayName(env, q))
			}
			return fail("extends cycle: "+strings.Join(append(names, name), " → "), "an environment cannot build on itself; break the cycle")
		}
	}
	base, ds := decode(name, data)
	if base == nil {
		return nil, ds
	}
	if base.Kind != KindEnvironment {
		return nil, ds // decode said what kind it is
	}
	base.Dir, base.Root, base.opts = filepath.Dir(abs), env.Root, env.opts
	if env.Spec.Parameters != nil {
		if base.Spec.Template == nil && base.Spec.Extends == nil {
			return nil, append(ds, errAt(env, "spec.parameters", "", "parameters need a template: "+name+", which this file extends, uses none",
				"set parameters only where a template gives the components, or remove spec.parameters"))
		}
		passParameters(env, base)
	}
	more, ok := build(base, chain)
	ds = append(ds, more...)
	if !ok {
		return nil, ds
	}
	_, ownKube := env.pos["spec.kubeconfig"]
	inherit(env, base)
	if !ownKube && env.Spec.Kubeconfig != nil {
		k := *env.Spec.Kubeconfig // the base's, read from its folder
		k.Path = relocate(k.Path, base.Dir, env.Dir)
		env.Spec.Kubeconfig = &k
	}
	for k, v := range base.via {
		if env.via == nil {
			env.via = map[string]string{}
		}
		env.via[k] = v
	}
	env.Sources = append(env.Sources, SourceFile{Kind: "extends", Path: abs, SHA256: sum})
	env.Sources = append(env.Sources, base.Sources...)
	layers := []*layer{}
	for i, c := range base.Spec.Components {
		rebase(c, base.Dir, env.Dir)
		layers = append(layers, newLayer(c, base.pos, base.bad, fmt.Sprintf("spec.components[%d]", i)))
	}
	return layers, ds
}

// passParameters sets env's spec.parameters over base's, for the template
// base uses (or, through its own extends, the one further down): "prod is
// staging with three replicas". The values keep env's positions, so a
// wrong one is reported in the file that wrote it.
func passParameters(env, base *Environment) {
	if base.Spec.Parameters == nil {
		base.Spec.Parameters = map[string]any{}
	}
	if base.pos == nil {
		base.pos = map[string]diag.Pos{}
	}
	for name, v := range env.Spec.Parameters {
		base.Spec.Parameters[name] = v
		key := "spec.parameters." + name
		graft(base.pos, env.pos, key, key)
		if env.bad != nil {
			if base.bad == nil {
				base.bad = map[string]bool{}
			}
			graft(base.bad, env.bad, key, key)
		}
	}
	if p, ok := env.pos["spec.parameters"]; ok {
		if _, has := base.pos["spec.parameters"]; !has {
			base.pos["spec.parameters"] = p
		}
	}
}

// inherit gives env every spec setting and metadata it does not write
// itself from base, with base's positions.
func inherit(env, base *Environment) {
	for _, k := range specKeys {
		if _, set := env.pos["spec."+k]; set {
			continue
		}
		setField(&env.Spec, &base.Spec, k)
		graft(env.pos, base.pos, "spec."+k, "spec."+k)
		graft(env.bad, base.bad, "spec."+k, "spec."+k)
	}
	m, bm := &env.Metadata, base.Metadata
	if m.Name == "" {
		m.Name = bm.Name
	}
	if m.Namespace == "" {
		m.Namespace = bm.Namespace
	}
	m.Labels = mergeStrings(bm.Labels, m.Labels)
	m.Annotations = mergeStrings(bm.Annotations, m.Annotations)
}

// specKeys are the spec settings an extending file inherits.
var specKeys = func() []string {
	var out []string
	for _, k := range jsonFields(EnvSpec{}) {
		switch k {
		case "components", "template", "extends", "parameters", "overrides":
		default:
			out = append(out, k)
		}
	}
	sort.Strings(out)
	return out
}()

func mergeStrings(base, over map[string]string) map[string]string {
	if base == nil && over == nil {
		return nil
	}
	out := map[string]string{}
	for k, v := range base {
		out[k] = v
	}
	for k, v := range over {
		out[k] = v
	}
	return out
}
