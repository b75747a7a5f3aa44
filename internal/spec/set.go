package spec

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"maps"
	"path"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"text/template"

	"gopkg.in/yaml.v3"

	"knit.dev/knit/internal/diag"
)

// Environment sets (knit.dev/v1): one EnvironmentSet file declares many
// environments from one template, one per element its generators yield
// (a list, the branches of the server's repository, or the cartesian
// product of two generators). Expanding a set gives plain Environments,
// each resolved and validated as if written by hand; spec never talks to
// git: the caller passes the branch list in.

// KindSet is the kind of an environment set file.
const KindSet = "EnvironmentSet"

// MaxSetElements bounds how many environments one set may generate, so a
// matrix of two long lists cannot make a commit expand into millions.
const MaxSetElements = 1000

// SourceSet is the SourceFile kind of the set a generated environment came from.
const SourceSet = "set"

// Set is a decoded EnvironmentSet file.
type Set struct {
	File, Dir, Root string
	Text            []byte
	Name            string
	TeamName        string
	EnvName         string // a text/template over the element
	Template        *TemplateRef
	Parameters      map[string]any
	// TTL is copied into each generated environment's spec.ttl.
	TTL string
	// AutoApprove is copied into each generated environment.
	AutoApprove bool
	Generators  []*Generator

	opts     Options
	pos      map[string]diag.Pos
	nameTmpl *template.Template
}

// Generator yields elements: exactly one of its fields is set.
type Generator struct {
	List        []map[string]any
	GitBranches *BranchGenerator
	Matrix      []*Generator
	path        string
}

// BranchGenerator yields one element per branch of the server's
// repository whose name matches Pattern (path.Match: "*" stops at "/").
type BranchGenerator struct {
	Pattern string
}

// SetElement is one element of a set: Vars is what envName and string
// parameters are executed over (a list element's fields, branch.name,
// branch.slug); Params are the list elements' own parameters (their
// "parameters" field), passed to the template over the set's.
type SetElement struct {
	Name   string         `json:"name"`
	Vars   map[string]any `json:"vars"`
	Params map[string]any `json:"params,omitempty"`
	// path is the generator entry the element came from.
	path string
}

// KindOf is the kind: of a YAML document ("" when it has none or does not parse).
func KindOf(data []byte) string {
	root, _, err := firstDocument(data)
	if err != nil || root.Kind != yaml.MappingNode {
		return ""
	}
	for i := 0; i+1 < len(root.Content); i += 2 {
		if root.Content[i].Value == "kind" && root.Content[i+1].Kind == yaml.ScalarNode {
			return root.Content[i+1].Value
		}
	}
	return ""
}

// ParseSet decodes and checks an EnvironmentSet document (not its
// elements: Expand does). name, dir and root are as for ParseWith.
func ParseSet(name, dir, root string, data []byte, opts Options) (*Set, diag.Diagnostics) {
	node, extra, err := firstDocument(data)
	if err != nil {
		return nil, diag.Diagnostics{syntaxError(name, data, err)}
	}
	d := newDecoder(name, node)
	s := &Set{File: name, Dir: dir, Root: root, Text: data, opts: opts}
	if node.Kind != yaml.MappingNode {
		d.errorf(node, "", "a set file is a mapping that starts with apiVersion: and kind:", "expected a mapping, found %s", kindName(node))
		return nil, d.diags
	}
	d.pos[""] = d.at(node)
	var apiVersion, kind string
	var meta Metadata
	d.mapping(node, "", false, map[string]field{
		"apiVersion": d.str(&apiVersion),
		"kind":       d.str(&kind),
		"metadata":   d.metadata(&meta),
		"spec": func(v *yaml.Node, p string) {
			d.mapping(v, p, false, map[string]field{
				"teamName":    d.str(&s.TeamName),
				"envName":     d.str(&s.EnvName),
				"template":    d.templateRef(&s.Template),
				"ttl":         d.str(&s.TTL),
				"autoApprove": d.boolean(&s.AutoApprove),
				"parameters":  d.paramValues(&s.Parameters),
				"generators": func(v *yaml.Node, p string) {
					d.sequence(v, p, func(_ int, item *yaml.Node, ip string) {
						if g := d.generator(item, ip, 0); g != nil {
							s.Generators = append(s.Generators, g)
						}
					})
				},
			})
		},
	})
	s.Name, s.pos = meta.Name, d.pos
	at := func(p string) *yaml.Node {
		pos := nearestIn(d.pos, p, name)
		return &yaml.Node{Line: pos.Line, Column: pos.Col}
	}
	if apiVersion != APIVersionKnit {
		d.errorf(at("apiVersion"), "apiVersion", "write apiVersion: "+APIVersionKnit, "an environment set needs apiVersion: %s, found %s", APIVersionKnit, quote(apiVersion))
	}
	if kind != KindSet {
		d.errorf(at("kind"), "kind", "write kind: "+KindSet, "expected kind: %s, found %s", KindSet, quote(kind))
	}
	if extra.line > 0 || extra.err != nil {
		d.errorf(&yaml.Node{Line: max(extra.line, 1), Column: 1}, "", "put each set in its own file", "a second YAML document: a set file holds exactly one")
	}
	required := []struct{ path, val, hint string }{
		{"spec.teamName", s.TeamName, "add teamName: TEAM"},
		{"spec.envName", s.EnvName, `add envName: a pattern over the element, such as "pr-{{ .branch.slug }}" or "{{ .name }}"`},
	}
	for _, r := range required {
		if r.val == "" && !d.bad[r.path] {
			d.errorf(at(r.path), r.path, r.hint, "missing required field %s", r.path)
		}
	}
	if s.Template == nil && !d.bad["spec.template"] {
		d.errorf(at("spec"), "spec.template", "add template: {path: ...}", "a set needs spec.template: its environments are built from it")
	}
	if len(s.Generators) == 0 && !d.bad["spec.generators"] {
		d.errorf(at("spec"), "spec.generators", "add generators: [{list: {elements: [...]}}] or [{gitBranches: {pattern: ...}}]", "a set needs at least one generator")
	}
	if s.TeamName != "" {
		if why := checkName(s.TeamName); why != "" {
			d.errorf(at("spec.teamName"), "spec.teamName", nameHint, "teamName %s", why)
		}
	}
	if s.EnvName != "" {
		t, err := template.New("envName").Option("missingkey=error").Parse(s.EnvName)
		if err != nil {
			d.errorf(at("spec.envName"), "spec.envName", `write a Go template such as "pr-{{ .branch.slug }}"`, "envName is not a valid pattern: %v", err)
		}
		s.nameTmpl = t
	}
	d.diags.Sort()
	return s, d.diags
}

// paramValues decodes a mapping of parameter values, keeping positions.
func (d *decoder) paramValues(dst *map[string]any) field {
	return func(v *yaml.Node, p string) {
		if n := resolve(v); n == nil || n.Kind != yaml.MappingNode {
			d.mismatch(v, p, "write parameters as NAME: VALUE lines", "expected a mapping, found %s", kindName(v))
			return
		}
		m, _ := d.value(v, p, 0).(map[string]any)
		*dst = m
	}
}

// generator decodes one generator entry; depth counts matrix nesting.
func (d *decoder) generator(n *yaml.Node, p string, depth int) *Generator {
	g := &Generator{path: p}
	set := 0
	d.mapping(n, p, false, map[string]field{
		"list": func(v *yaml.Node, lp string) {
			set++
			g.List = []map[string]any{}
			d.mapping(v, lp, false, map[string]field{
				"elements": func(v *yaml.Node, ep string) {
					d.sequence(v, ep, func(_ int, item *yaml.Node, ip string) {
						m, ok := d.value(item, ip, 0).(map[string]any)
						if !ok {
							d.mismatch(item, ip, "write each element as a mapping of parameters", "expected a mapping, found %s", kindName(item))
							return
						}
						g.List = append(g.List, m)
					})
				},
			})
		},
		"gitBranches": func(v *yaml.Node, bp string) {
			set++
			g.GitBranches = &BranchGenerator{}
			d.mapping(v, bp, false, map[string]field{"pattern": d.str(&g.GitBranches.Pattern)})
			pat := g.GitBranches.Pattern
			if _, err := path.Match(pat, ""); err != nil || pat == "" {
				d.errorf(v, join(bp, "pattern"), `write a glob such as "feature/*" ("*" does not match "/")`, "gitBranches needs a valid pattern, found %s", quote(pat))
			}
		},
		"matrix": func(v *yaml.Node, mp string) {
			set++
			if depth > 0 {
				d.errorf(v, mp, "put the matrix at the top of generators", "a matrix inside a matrix is not supported")
				return
			}
			d.mapping(v, mp, false, map[string]field{
				"generators": func(v *yaml.Node, gp string) {
					d.sequence(v, gp, func(_ int, item *yaml.Node, ip string) {
						if sub := d.generator(item, ip, depth+1); sub != nil {
							g.Matrix = append(g.Matrix, sub)
						}
					})
				},
			})
			if len(g.Matrix) != 2 {
				d.errorf(v, mp, "a matrix combines exactly two generators", "matrix has %d generators", len(g.Matrix))
				g.Matrix = nil
			}
		},
	})
	if set != 1 {
		d.errorf(n, p, "write one of list:, gitBranches: or matrix:", "a generator is exactly one of list, gitBranches or matrix (found %d)", set)
		return nil
	}
	return g
}

var notSlug = regexp.MustCompile(`[^a-z0-9]+`)

// Slug is a branch name made DNS-safe: lower case, runs of other
// characters as one "-", at most 40 characters.
func Slug(branch string) string {
	s := strings.Trim(notSlug.ReplaceAllString(strings.ToLower(branch), "-"), "-")
	if len(s) > 40 {
		s = strings.TrimRight(s[:40], "-")
	}
	return s
}

// elements evaluates g over branches.
func (g *Generator) elements(branches []string) []SetElement {
	switch {
	case g.GitBranches != nil:
		var out []SetElement
		for _, b := range branches {
			if ok, _ := path.Match(g.GitBranches.Pattern, b); ok {
				out = append(out, SetElement{path: g.path, Vars: map[string]any{"branch": map[string]any{"name": b, "slug": Slug(b)}}})
			}
		}
		return out
	case g.Matrix != nil:
		var out []SetElement
		for _, a := range g.Matrix[0].elements(branches) {
			for _, b := range g.Matrix[1].elements(branches) {
				e := SetElement{path: a.path, Vars: maps.Clone(a.Vars), Params: maps.Clone(a.Params)}
				maps.Copy(e.Vars, b.Vars)
				if b.Params != nil {
					if e.Params == nil {
						e.Params = map[string]any{}
					}
					maps.Copy(e.Params, b.Params)
				}
				out = append(out, e)
				if len(out) > MaxSetElements {
					return out // enough to report the bound
				}
			}
		}
		return out
	}
	out := make([]SetElement, 0, len(g.List))
	for i, m := range g.List {
		params, _ := m["parameters"].(map[string]any)
		out = append(out, SetElement{path: fmt.Sprintf("%s.list.elements[%d]", g.path, i), Vars: m, Params: params})
	}
	return out
}

// Elements evaluates the set's generators over the repository's branches
// and names each element, checking the names: valid, unique, and at most
// MaxSetElements of them.
func (s *Set) Elements(branches []string) ([]SetElement, diag.Diagnostics) {
	var ds diag.Diagnostics
	var all []SetElement
	for _, g := range s.Generators {
		all = append(all, g.elements(branches)...)
		if len(all) > MaxSetElements {
			return nil, diag.Diagnostics{s.errAt("spec.generators", fmt.Sprintf("the set's generators yield more than %d elements", MaxSetElements),
				"split the set, or narrow its lists and branch patterns")}
		}
	}
	if s.nameTmpl == nil {
		return nil, ds
	}
	seen := map[string]string{}
	for i := range all {
		e := &all[i]
		var b bytes.Buffer
		if err := s.nameTmpl.Execute(&b, e.Vars); err != nil {
			ds = append(ds, s.errAt(e.path, "envName cannot be made for this element: "+cleanTmplErr(err),
				"the pattern may use only the element's fields (list fields, .branch.name, .branch.slug)"))
			continue
		}
		e.Name = b.String()
		if why := checkName(e.Name); why != "" {
			ds = append(ds, s.errAt(e.path, "the generated envName "+why, nameHint+"; change spec.envName or the element"))
			continue
		}
		if prev, dup := seen[e.Name]; dup {
			ds = append(ds, s.errAt(e.path, fmt.Sprintf("two elements generate the envName %s (the other is at %s)", quote(e.Name), s.posOf(prev)),
				"make spec.envName use a field that differs between elements"))
			continue
		}
		seen[e.Name] = e.path
	}
	if ds.HasErrors() {
		ds.Sort()
		return nil, ds
	}
	sort.Slice(all, func(i, j int) bool { return all[i].Name < all[j].Name })
	return all, nil
}

func cleanTmplErr(err error) string {
	msg := err.Error()
	if i := strings.LastIndex(msg, ": "); i >= 0 {
		return msg[i+2:]
	}
	return msg
}

func (s *Set) errAt(p, msg, hint string) diag.Diagnostic {
	return diag.Diagnostic{Severity: diag.Error, Pos: nearestIn(s.pos, p, s.File), Field: p, Message: msg, Hint: hint}
}

func (s *Set) posOf(p string) string {
	pos := nearestIn(s.pos, p, s.File)
	return fmt.Sprintf("%s:%d:%d", pos.File, pos.Line, pos.Col)
}

// Environment builds, resolves and validates the environment of element
// e: the set's template with the set's parameters (string values executed
// over the element like envName) and the element's own on top.
func (s *Set) Environment(e SetElement) (*Environment, diag.Diagnostics) {
	params := map[string]any{}
	pos := maps.Clone(s.pos)
	var ds diag.Diagnostics
	for k, v := range s.Parameters {
		if str, ok := v.(string); ok && strings.Contains(str, "{{") {
			t, err := template.New(k).Option("missingkey=error").Parse(str)
			var b bytes.Buffer
			if err == nil {
				err = t.Execute(&b, e.Vars)
			}
			if err != nil {
				ds = append(ds, s.errAt("spec.parameters."+k, "parameter "+k+" cannot be made for element "+quote(e.Name)+": "+cleanTmplErr(err),
					"a parameter pattern may use only the element's fields"))
				continue
			}
			v = b.String()
		}
		params[k] = v
	}
	for k, v := range e.Params {
		params[k] = v
		pos["spec.parameters."+k] = nearestIn(s.pos, e.path+".parameters."+k, s.File)
	}
	if ds.HasErrors() {
		return nil, ds
	}
	pos["spec.envName"] = nearestIn(s.pos, e.path, s.File)
	env := &Environment{APIVersion: APIVersionKnit, Kind: KindEnvironment, File: s.File, Dir: s.Dir, Root: s.Root, Text: s.Text,
		opts: s.opts, pos: pos, bad: map[string]bool{},
		Metadata: Metadata{Name: e.Name},
		Spec:     EnvSpec{TeamName: s.TeamName, EnvName: e.Name, Template: s.Template, Parameters: params, AutoApprove: s.AutoApprove, TTL: s.TTL}}
	if s.TTL != "" {
		pos["spec.ttl"] = nearestIn(s.pos, "spec.ttl", s.File)
	}
	if s.Template != nil {
		ref := *s.Template
		env.Spec.Template = &ref
	}
	built, ok := build(env, nil)
	ds = append(ds, built...)
	if ok {
		ds = append(ds, substituteZLocals(env)...)
		inheritKubeconfig(env)
		ds = append(ds, validate(env)...)
	}
	sum := sha256.Sum256(s.Text)
	abs := s.File
	if !filepath.IsAbs(abs) {
		abs = filepath.Join(s.Dir, filepath.Base(s.File))
	}
	env.Sources = append([]SourceFile{{Kind: SourceSet, Name: filepath.Base(s.File), Path: abs, SHA256: hex.EncodeToString(sum[:])}}, env.Sources...)
	ds.Sort()
	return env, ds
}

// CheckSet loads the set file at path and expands it with no branches
// (outside a server a gitBranches generator yields nothing): what
// `knit validate -f SET` reports.
func CheckSet(file string, opts Options) ([]*Environment, diag.Diagnostics) {
	s, ds := LoadSet(file, opts)
	if ds.HasErrors() {
		return nil, ds
	}
	return s.Expand(nil)
}

// LoadSet reads and parses the EnvironmentSet file (not its elements:
// Expand does), outside any server's repository.
func LoadSet(file string, opts Options) (*Set, diag.Diagnostics) {
	data, err := readFile(file)
	if err != nil {
		return nil, diag.Diagnostics{{Severity: diag.Error, Pos: diag.Pos{File: file}, Message: err.Error()}}
	}
	abs, err := filepath.Abs(file)
	if err != nil {
		abs = file
	}
	return ParseSet(file, filepath.Dir(abs), "", data, opts)
}

// BranchGenerator returns where the set's first gitBranches generator is
// written ("file:line:col"), if it has one: such a set generates
// environments only from a list of branches (the server's repository's).
func (s *Set) BranchGenerator() (string, bool) {
	var find func(gs []*Generator) (string, bool)
	find = func(gs []*Generator) (string, bool) {
		for _, g := range gs {
			if g.GitBranches != nil {
				return s.posOf(g.path + ".gitBranches"), true
			}
			if at, ok := find(g.Matrix); ok {
				return at, true
			}
		}
		return "", false
	}
	return find(s.Generators)
}

// Expand is every environment of the set, given the repository's
// branches, each resolved and validated; any error in any element makes
// the whole set invalid (nothing of it should run half).
func (s *Set) Expand(branches []string) ([]*Environment, diag.Diagnostics) {
	els, ds := s.Elements(branches)
	if ds.HasErrors() {
		return nil, ds
	}
	envs := make([]*Environment, 0, len(els))
	seen := map[string]bool{} // a mistake of the template shows once, not once per element
	for _, e := range els {
		env, more := s.Environment(e)
		for _, d := range more {
			if k := d.String(); !seen[k] {
				seen[k] = true
				ds = append(ds, d)
			}
		}
		if env != nil {
			envs = append(envs, env)
		}
	}
	ds.Sort()
	return envs, ds
}
