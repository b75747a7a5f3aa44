package spec

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"maps"
	"path/filepath"
	"sort"
	"strings"
	"text/template"

	"gopkg.in/yaml.v3"

	"knit.dev/knit/internal/diag"
)

// Environment sets (knit.dev/v1): one EnvironmentSet file declares many
// environments from one template, one per element its generators yield
// (a list, the branches of the server's repository, the live environments
// whose labels match, or the cartesian product of two generators).
// Expanding a set gives plain Environments, each resolved and validated
// as if written by hand; spec never talks to git nor to a store: the
// caller passes the branches and live environments in (SetInputs).

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
	// Labels become each generated environment's metadata.labels, values
	// executed over the element like envName.
	Labels map[string]string
	// Exports are copied into each generated environment's spec.exports.
	Exports    []Export
	Generators []*Generator
	// Rollout is the set's spec.rollout (waves.go).
	Rollout *SetRollout

	opts     Options
	pos      map[string]diag.Pos
	nameTmpl *template.Template
}

// Generator yields elements: exactly one of its fields is set.
type Generator struct {
	List         []map[string]any
	GitBranches  *BranchGenerator
	Environments *EnvGenerator
	Matrix       []*Generator
	path         string
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
	// Producer is the TEAM/ENV an environments generator made the element
	// from ("" for other generators).
	Producer string `json:"producer,omitempty"`
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
				"labels":      d.setLabels(&s.Labels),
				"exports":     d.exports(&s.Exports),
				"parameters":  d.paramValues(&s.Parameters),
				"rollout":     d.setRollout(&s.Rollout),
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
		d.errorf(at("spec"), "spec.generators", "add generators: [{list: {elements: [...]}}], [{gitBranches: {pattern: ...}}] or [{environments: {selector: ...}}]", "a set needs at least one generator")
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

// Elements is ElementsOver the repository's branches and no live
// environment.
func (s *Set) Elements(branches []string) ([]SetElement, diag.Diagnostics) {
	return s.ElementsOver(SetInputs{Branches: branches})
}

// ElementsOver evaluates the set's generators over in and names each
// element, checking the names: valid, unique, and at most MaxSetElements
// of them.
func (s *Set) ElementsOver(in SetInputs) ([]SetElement, diag.Diagnostics) {
	var ds diag.Diagnostics
	var all []SetElement
	for _, g := range s.Generators {
		all = append(all, g.elements(in)...)
		if len(all) > MaxSetElements {
			return nil, diag.Diagnostics{s.errAt("spec.generators", fmt.Sprintf("the set's generators yield more than %d elements", MaxSetElements),
				"split the set, or narrow its lists and branch patterns")}
		}
	}
	if s.nameTmpl == nil {
		return nil, ds
	}
	seen := map[string]SetElement{}
	for i := range all {
		e := &all[i]
		var b bytes.Buffer
		if err := s.nameTmpl.Execute(&b, e.Vars); err != nil {
			ds = append(ds, s.errAt(e.path, "envName cannot be made for this element: "+cleanTmplErr(err),
				"the pattern may use only the element's fields (list fields, .branch.name, .branch.slug, .env.team, .env.name, .env.labels.KEY, .env.outputs.COMPONENT.OUTPUT)"+producerHint(*e, s.TeamName)))
			continue
		}
		e.Name = b.String()
		if why := checkName(e.Name); why != "" {
			ds = append(ds, s.errAt(e.path, "the generated envName "+why+fromProducer(*e), nameHint+"; change spec.envName or the element"))
			continue
		}
		if prev, dup := seen[e.Name]; dup {
			ds = append(ds, s.errAt(e.path, fmt.Sprintf("two elements generate the envName %s (%s)", quote(e.Name), s.collision(prev, *e)),
				"make spec.envName use a field that differs between elements"))
			continue
		}
		seen[e.Name] = *e
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
			got, err := execPattern(k, str, e.Vars)
			if err != nil {
				ds = append(ds, s.errAt("spec.parameters."+k, "parameter "+k+" cannot be made for element "+quote(e.Name)+": "+cleanTmplErr(err),
					"a parameter pattern may use only the element's fields"+producerHint(e, s.TeamName)))
				continue
			}
			v = got
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
	meta := Metadata{Name: e.Name}
	labels, more := s.ElementLabels(e)
	ds = append(ds, more...)
	if ds.HasErrors() {
		return nil, ds
	}
	meta.Labels = labels
	if e.Producer != "" {
		meta.Annotations = map[string]string{AnnotationGeneratedFrom: e.Producer}
	}
	env := &Environment{APIVersion: APIVersionKnit, Kind: KindEnvironment, File: s.File, Dir: s.Dir, Root: s.Root, Text: s.Text,
		opts: s.opts, pos: pos, bad: map[string]bool{},
		Metadata: meta,
		Spec:     EnvSpec{TeamName: s.TeamName, EnvName: e.Name, Template: s.Template, Parameters: params, AutoApprove: s.AutoApprove, TTL: s.TTL, Exports: s.Exports, Rollout: s.envRollout()}}
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
// and no live environment (outside a server a gitBranches generator
// yields nothing).
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
	return s.findGenerator(func(g *Generator) bool { return g.GitBranches != nil }, ".gitBranches")
}

// Expand is ExpandOver the repository's branches and no live environment.
func (s *Set) Expand(branches []string) ([]*Environment, diag.Diagnostics) {
	return s.ExpandOver(SetInputs{Branches: branches})
}

// ExpandOver is every environment of the set over in, each resolved and
// validated; any error in any element makes the whole set invalid
// (nothing of it should run half).
func (s *Set) ExpandOver(in SetInputs) ([]*Environment, diag.Diagnostics) {
	els, ds := s.ElementsOver(in)
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

// collision says which two elements generate one name: the producers of
// an environments generator's, else where the first is written.
func (s *Set) collision(prev, e SetElement) string {
	if prev.Producer != "" && e.Producer != "" {
		return "made from " + prev.Producer + " and from " + e.Producer
	}
	if prev.Producer != "" {
		return "the other is made from " + prev.Producer
	}
	return "the other is at " + s.posOf(prev.path)
}

// fromProducer is " (made from TEAM/ENV)" for an element an environments
// generator made, "" otherwise.
func fromProducer(e SetElement) string {
	if e.Producer == "" {
		return ""
	}
	return " (made from " + e.Producer + ")"
}
