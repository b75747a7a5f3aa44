package spec

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"gopkg.in/yaml.v3"

	"knit.dev/knit/internal/diag"
)

// maxExtends bounds a chain of files extending files, so a hostile
// repository cannot make loading walk forever.
const maxExtends = 16

// templateFile is a template as one environment sees it: its components
// decoded after its parameters were substituted.
type templateFile struct {
	name   string // what positions call the file
	params []*Parameter
	comps  []*Component
	pos    map[string]diag.Pos
	bad    map[string]bool
}

func (t *templateFile) errAt(path, msg, hint string) diag.Diagnostic {
	return diag.Diagnostic{Severity: diag.Error, Pos: nearestIn(t.pos, path, t.name), Field: path, Message: msg, Hint: hint}
}

// nearestIn is where the field at path, or its nearest written ancestor, is.
func nearestIn(pos map[string]diag.Pos, path, file string) diag.Pos {
	for p := path; p != ""; p = parentPath(p) {
		if at, ok := pos[p]; ok {
			return at
		}
	}
	if at, ok := pos[""]; ok {
		return at
	}
	return diag.Pos{File: file}
}

// layer is one component of the environment being built, with where each
// of its fields was written (by path below the component: "" is the
// component, ".module.source" its module's source).
type layer struct {
	c   *Component
	pos map[string]diag.Pos
	bad map[string]bool
}

func newLayer(c *Component, pos map[string]diag.Pos, bad map[string]bool, prefix string) *layer {
	return &layer{c: c, pos: cut(pos, prefix), bad: cut(bad, prefix)}
}

// cut returns the entries of m at prefix or below it, keyed by the rest of the path.
func cut[V any](m map[string]V, prefix string) map[string]V {
	out := map[string]V{}
	for k, v := range m {
		if rest, ok := below(k, prefix); ok {
			out[rest] = v
		}
	}
	return out
}

// below reports whether path k is prefix or inside it, and the rest.
func below(k, prefix string) (string, bool) {
	if !strings.HasPrefix(k, prefix) {
		return "", false
	}
	rest := k[len(prefix):]
	if rest != "" && rest[0] != '.' && rest[0] != '[' {
		return "", false
	}
	return rest, true
}

// graft replaces dst's subtree to with src's subtree from.
func graft[V any](dst, src map[string]V, from, to string) {
	for k := range dst {
		if _, ok := below(k, to); ok {
			delete(dst, k)
		}
	}
	for k, v := range src {
		if rest, ok := below(k, from); ok {
			dst[to+rest] = v
		}
	}
}

// build resolves env's template or extended file and its overrides into
// its components, and records what it was built from. ok is false when
// there are no components to validate (the template could not be read).
func build(env *Environment, chain []string) (diag.Diagnostics, bool) {
	s := &env.Spec
	var ds diag.Diagnostics
	if s.Template == nil && s.Extends == nil {
		if s.Parameters != nil {
			ds = append(ds, errAt(env, "spec.parameters", "", "parameters need a template", "add spec.template: {path: ...}, or remove spec.parameters"))
		}
		if s.Overrides != nil {
			ds = append(ds, errAt(env, "spec.overrides", "", "overrides need a template or an extended file", "add spec.template or spec.extends, or write the components under spec.components"))
		}
		return ds, true
	}
	from := "spec.template"
	if s.Template == nil {
		from = "spec.extends"
	}
	if env.APIVersion != APIVersionKnit {
		ds = append(ds, errAt(env, from, "", "templates and extends need apiVersion: "+APIVersionKnit, "change apiVersion to "+APIVersionKnit))
	}
	if s.Template != nil && s.Extends != nil {
		return append(ds, errAt(env, "spec.extends", "", "an environment takes its components from a template or from another environment, not both",
			"remove spec.template or spec.extends")), false
	}
	if len(s.Components) > 0 {
		ds = append(ds, errAt(env, "spec.components", "", "with "+from+", the components come from there",
			"change or add components under spec.overrides.components"))
	}
	if env.Root == "" {
		switch {
		case env.opts.Repo != "":
			env.Root = env.opts.Repo
		case env.opts.RepoRoot:
			env.Root = repoRoot(env.Dir)
		default:
			env.Root = env.Dir
		}
	}
	var layers []*layer
	var more diag.Diagnostics
	if s.Template != nil {
		if s.Template.Git == "" && s.Template.Ref != "" {
			ds = append(ds, errAt(env, "spec.template.ref", "", "ref applies only to a template from git", "add git: URL, or remove ref"))
		}
		layers, more = useTemplate(env)
	} else {
		layers, more = extend(env, chain) // which hands spec.parameters to the base's template
	}
	ds = append(ds, more...)
	if layers == nil && more.HasErrors() {
		return ds, false
	}
	layers, more = applyOverrides(env, layers)
	ds = append(ds, more...)
	install(env, layers, from)
	annotate(env)
	s.Template, s.Extends, s.Parameters, s.Overrides = nil, nil, nil, nil
	return ds, true
}

// useTemplate reads env's template and returns its components.
func useTemplate(env *Environment) ([]*layer, diag.Diagnostics) {
	ref := env.Spec.Template
	fail := func(sub, msg, hint string) ([]*layer, diag.Diagnostics) {
		return nil, diag.Diagnostics{errAt(env, "spec.template", sub, msg, hint)}
	}
	if ref.Path == "" {
		return fail("path", "missing required field", "name the template file: path: ../templates/NAME.yaml")
	}
	src := SourceFile{Kind: "template"}
	var root, dir, name string
	var g *gitOrigin
	if ref.Git != "" {
		if ref.Ref == "" {
			return fail("ref", "a template from git needs a ref", "pin a version: ref: a tag or a commit")
		}
		if env.opts.Checkout == nil {
			return fail("git", "templates from git cannot be read here", "")
		}
		repo, commit, err := env.opts.Checkout(ref.Git, ref.Ref)
		if err != nil {
			return fail("git", err.Error(), "check the URL and that the ref exists")
		}
		root, dir, name = repo, repo, ref.Git+"@"+ref.Ref+":"+ref.Path
		src.Git, src.Commit, src.Name = ref.Git, commit, filepath.ToSlash(filepath.Clean(ref.Path))
		g = &gitOrigin{url: ref.Git, commit: commit, sub: filepath.ToSlash(filepath.Dir(filepath.Clean(ref.Path)))}
	} else {
		root, dir = env.Root, env.Dir
		env.opts.noteRead(dir, ref.Path)
	}
	abs, data, sum, err := readSource(root, dir, ref.Path)
	if err != nil {
		return fail("path", "template: "+err.Error(), "")
	}
	if g == nil {
		name = displayName(env, abs)
	}
	src.Path, src.SHA256 = abs, sum
	t, ds := parseTemplate(env, name, data)
	if t == nil {
		return nil, ds
	}
	env.Sources = append(env.Sources, src)
	var layers []*layer
	for i, c := range t.comps {
		if g != nil {
			ds = append(ds, g.rebase(c, t, fmt.Sprintf("spec.components[%d]", i))...)
		} else {
			rebase(c, filepath.Dir(abs), env.Dir)
		}
		layers = append(layers, newLayer(c, t.pos, t.bad, fmt.Sprintf("spec.components[%d]", i)))
	}
	if layers == nil {
		layers = []*layer{}
	}
	return layers, ds
}

// parseTemplate decodes a template file for env: parameters first, then
// every ${param.NAME} substituted, then the rest. Nil when the file is
// not a template at all.
func parseTemplate(env *Environment, name string, data []byte) (*templateFile, diag.Diagnostics) {
	root, extra, err := env.opts.Docs.firstDocument(data)
	if err != nil {
		return nil, diag.Diagnostics{syntaxError(name, data, err)}
	}
	t := &templateFile{name: name}
	dp := newDecoder(name, root)
	if root.Kind != yaml.MappingNode {
		dp.errorf(root, "", "a template file is a mapping that starts with apiVersion: knit.dev/v1 and kind: EnvironmentTemplate",
			"expected a mapping, found %s", kindName(root))
		return nil, dp.diags
	}
	pn, _ := mapValue(root, "spec", "parameters")
	if pn != nil {
		dp.parameters(&t.params)(pn, "spec.parameters")
	}
	t.pos = dp.pos
	ds := append(dp.diags, checkParameters(t)...)
	values, failed, bds := bindParameters(env, t)
	ds = append(ds, bds...)
	declared := map[string]bool{}
	for _, p := range t.params {
		declared[p.Name] = true
	}
	via := func(line int, name string) {
		from := "default"
		if _, given := env.Spec.Parameters[name]; given {
			from = env.origin("spec.parameters." + name)
		} else {
			for _, p := range t.params {
				if p.Name == name {
					from = "default at " + posLine(nearestIn(t.pos, p.path+".default", t.name))
				}
			}
		}
		key, note := fmt.Sprintf("%s:%d", t.name, line), "${param."+name+"} from "+from
		if env.placeholders[name] {
			if env.placed == nil {
				env.placed = map[string][]string{}
			}
			if ps := env.placed[key]; !slices.Contains(ps, name) {
				env.placed[key] = append(ps, name)
			}
		}
		if env.via == nil {
			env.via = map[string]string{}
		}
		if have := env.via[key]; have != "" && !strings.Contains(have, note) {
			note = have + "; " + note
		}
		env.via[key] = note
	}
	if spec, _ := mapValue(root, "spec"); spec != nil && spec.Kind == yaml.MappingNode {
		for i := 0; i+1 < len(spec.Content); i += 2 {
			if spec.Content[i].Value != "parameters" {
				ds = append(ds, substitute(t, spec.Content[i+1], values, declared, failed, via)...)
			}
		}
	}
	d := newDecoder(name, root)
	var apiVersion, kind, desc string
	var meta Metadata
	d.pos[""] = d.at(root)
	d.mapping(root, "", false, map[string]field{
		"apiVersion": d.str(&apiVersion),
		"kind":       d.str(&kind),
		"metadata":   d.metadata(&meta),
		"spec": func(v *yaml.Node, path string) {
			d.mapping(v, path, false, map[string]field{
				"description": d.str(&desc),
				"parameters":  func(*yaml.Node, string) {},
				"components": func(v *yaml.Node, path string) {
					d.sequence(v, path, func(_ int, item *yaml.Node, p string) {
						c := &Component{}
						d.component(c)(item, p)
						t.comps = append(t.comps, c)
					})
				},
			})
		},
	})
	for k, v := range dp.pos {
		d.pos[k] = v
	}
	t.pos, t.bad = d.pos, d.bad
	at := func(path string) *yaml.Node {
		p := nearestIn(d.pos, path, name)
		return &yaml.Node{Line: p.Line, Column: p.Col}
	}
	switch {
	case kind == KindEnvironment:
		d.errorf(at("kind"), "kind", "to build on an Environment, use spec.extends: {path: ...}", "a template has kind: %s, found %s", KindTemplate, quote(kind))
	case kind != KindTemplate:
		d.errorf(at("kind"), "kind", "write kind: "+KindTemplate, "a template has kind: %s, found %s", KindTemplate, quote(kind))
	}
	if apiVersion != APIVersionKnit {
		d.errorf(at("apiVersion"), "apiVersion", "write apiVersion: "+APIVersionKnit, "a template has apiVersion: %s, found %s", APIVersionKnit, quote(apiVersion))
	}
	if extra.line > 0 || extra.err != nil {
		d.errorf(&yaml.Node{Line: extra.line, Column: 1}, "", "put the template in its own file", "a second YAML document: a template file holds exactly one")
	}
	return t, append(ds, d.diags...)
}

func realPath(p string) string {
	if r, err := filepath.EvalSymlinks(p); err == nil {
		return r
	}
	return p
}

// displayName is what positions call file abs, read by env: its path
// relative to env's file's folder, joined to how env's file is named.
func displayName(env *Environment, abs string) string {
	rel, err := filepath.Rel(absDir(env.Dir), abs)
	if err != nil {
		return abs
	}
	return filepath.Clean(filepath.Join(filepath.Dir(env.File), rel))
}

func absDir(dir string) string {
	if a, err := filepath.Abs(dir); err == nil {
		return a
	}
	return dir
}

// install makes layers env's components, with their positions.
func install(env *Environment, layers []*layer, from string) {
	for _, m := range []map[string]diag.Pos{env.pos} {
		for k := range m {
			if _, ok := below(k, "spec.components"); ok {
				delete(m, k)
			}
		}
	}
	for k := range env.bad {
		if _, ok := below(k, "spec.components"); ok {
			delete(env.bad, k)
		}
	}
	env.pos["spec.components"] = env.nearestPos(from)
	env.Spec.Components = nil
	for i, l := range layers {
		env.Spec.Components = append(env.Spec.Components, l.c)
		p := fmt.Sprintf("spec.components[%d]", i)
		for k, v := range l.pos {
			env.pos[p+k] = v
		}
		for k, v := range l.bad {
			env.bad[p+k] = v
		}
	}
	if env.Root != "" && env.Dir != "" {
		if up, err := filepath.Rel(absDir(env.Dir), absDir(env.Root)); err == nil && up != "." {
			env.Up = filepath.ToSlash(up)
		}
	}
}

// annotate records what env was built from in its annotations, so the
// resolved spec (and a revision of it) changes when any of them does.
func annotate(env *Environment) {
	var tmpl, ext []string
	for i := range env.Sources {
		s := &env.Sources[i]
		if s.Git == "" {
			if rel, err := filepath.Rel(absDir(env.Dir), s.Path); err == nil {
				s.Name = filepath.ToSlash(rel)
			}
		}
		if s.Kind == "template" {
			tmpl = append(tmpl, s.ID())
		} else {
			ext = append(ext, s.ID())
		}
	}
	if env.Metadata.Annotations == nil {
		env.Metadata.Annotations = map[string]string{}
	}
	delete(env.Metadata.Annotations, AnnotationTemplate)
	delete(env.Metadata.Annotations, AnnotationExtends)
	if len(tmpl) > 0 {
		env.Metadata.Annotations[AnnotationTemplate] = strings.Join(tmpl, ", ")
	}
	if len(ext) > 0 {
		env.Metadata.Annotations[AnnotationExtends] = strings.Join(ext, ", ")
	}
}
