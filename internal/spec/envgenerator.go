package spec

import (
	"bytes"
	"fmt"
	"maps"
	"sort"
	"strings"
	"text/template"

	"gopkg.in/yaml.v3"

	"knit.dev/knit/internal/diag"
)

// The environments generator (the cluster generator of Argo CD's
// ApplicationSets, over knit's own environments): one element per live
// environment whose metadata.labels its selector matches. spec never reads
// a store: the caller passes the live environments in (SetInputs), each
// with only the outputs its producer exports to the set's team.

// AnnotationGeneratedFrom is the annotation of an environment an
// environments generator made: the producer's TEAM/ENV. The generated
// environment counts as a consumer of its producer (Upstreams), so the
// producer's teardown waits for it.
const AnnotationGeneratedFrom = "knit.dev/generated-from"

// EnvGenerator yields one element per live environment Selector matches.
type EnvGenerator struct {
	Selector Selector `json:"selector"`
}

// LiveEnvironment is an environment an environments generator may select:
// applied and not torn down, with its labels (as its applied revision
// declares them) and the outputs its producer exports to the reading team,
// by component then output name. A sensitive output is never among them:
// read it with valueFrom: {environment: ..., output: ...}.
type LiveEnvironment struct {
	Team    string                    `json:"team"`
	Name    string                    `json:"name"`
	Labels  map[string]string         `json:"labels,omitempty"`
	Outputs map[string]map[string]any `json:"outputs,omitempty"`
}

// ID is TEAM/ENV.
func (l LiveEnvironment) ID() string { return l.Team + "/" + l.Name }

// SetInputs is what a set's generators read beyond its file: the branches
// of the server's repository (gitBranches) and the live environments
// (environments), sorted by ID.
type SetInputs struct {
	Branches     []string
	Environments []LiveEnvironment
}

// environmentsGenerator decodes an environments: generator at p.
func (d *decoder) environmentsGenerator(g *Generator) field {
	return func(v *yaml.Node, p string) {
		g.Environments = &EnvGenerator{}
		n := resolve(v)
		if n == nil || n.Kind != yaml.MappingNode {
			d.mismatch(v, p, "write environments: {selector: {matchLabels: {role: cluster}}}", "expected a mapping, found %s", kindName(v))
			return
		}
		seen := false
		d.mapping(n, p, false, map[string]field{
			"selector": func(v *yaml.Node, sp string) { seen = true; d.selector(&g.Environments.Selector)(v, sp) },
		})
		if !seen {
			d.errorf(n, join(p, "selector"), "add selector: {matchLabels: {role: cluster}}", "an environments generator needs a selector")
		}
	}
}

// environmentElements is one element per environment of envs g selects,
// with the fields env.team, env.name, env.labels.* and env.outputs.C.O.
func (g *Generator) environmentElements(envs []LiveEnvironment) []SetElement {
	var out []SetElement
	for _, e := range envs {
		if !g.Environments.Selector.Matches(e.Labels) {
			continue
		}
		labels := make(map[string]any, len(e.Labels))
		for k, v := range e.Labels {
			labels[k] = v
		}
		outputs := make(map[string]any, len(e.Outputs))
		for c, os := range e.Outputs {
			outputs[c] = maps.Clone(os)
		}
		out = append(out, SetElement{path: g.path + ".environments", Producer: e.ID(),
			Vars: map[string]any{"env": map[string]any{"team": e.Team, "name": e.Name, "labels": labels, "outputs": outputs}}})
		if len(out) > MaxSetElements {
			return out // enough to report the bound
		}
	}
	return out
}

// EnvironmentGenerator returns where the set's first environments
// generator is written ("file:line:col"), if it has one: such a set reads
// the live environments of a store.
func (s *Set) EnvironmentGenerator() (string, bool) {
	return s.findGenerator(func(g *Generator) bool { return g.Environments != nil }, ".environments")
}

// findGenerator is where the first generator is (matrices included) for
// which is holds; suffix is appended to its path.
func (s *Set) findGenerator(is func(*Generator) bool, suffix string) (string, bool) {
	var find func(gs []*Generator) (string, bool)
	find = func(gs []*Generator) (string, bool) {
		for _, g := range gs {
			if is(g) {
				return s.posOf(g.path + suffix), true
			}
			if at, ok := find(g.Matrix); ok {
				return at, true
			}
		}
		return "", false
	}
	return find(s.Generators)
}

// producerHint says what the producer of element e lets the set read, for
// an error of a pattern over it.
func producerHint(e SetElement, team string) string {
	if e.Producer == "" {
		return ""
	}
	env, _ := e.Vars["env"].(map[string]any)
	outs, _ := env["outputs"].(map[string]any)
	var names []string
	for c, os := range outs {
		m, _ := os.(map[string]any)
		for o := range m {
			names = append(names, c+"."+o)
		}
	}
	sort.Strings(names)
	exported := "no output"
	if len(names) > 0 {
		exported = strings.Join(names, ", ")
	}
	return fmt.Sprintf("; %s exports to team %s: %s (its spec.exports decides; a sensitive output is read with valueFrom: {environment, output})",
		e.Producer, team, exported)
}

// setLabels decodes a set's spec.labels: label keys, and values that are
// label values or patterns over the element ("{{ .region }}").
func (d *decoder) setLabels(dst *map[string]string) field {
	return func(v *yaml.Node, p string) {
		if m, _ := d.labelMap(v, p, "labels", true); m != nil {
			*dst = m
		}
	}
}

// labelsOf executes the set's labels over element e.
func (s *Set) labelsOf(e SetElement) (map[string]string, diag.Diagnostics) {
	if len(s.Labels) == 0 {
		return nil, nil
	}
	var ds diag.Diagnostics
	out := make(map[string]string, len(s.Labels))
	for k, v := range s.Labels {
		got, err := execPattern(k, v, e.Vars)
		if err == nil && !labelValue.MatchString(got) {
			err = fmt.Errorf("%s is not a label value (at most 63 letters, digits, '-', '_', '.')", quote(got))
		}
		if err != nil {
			ds = append(ds, s.errAt("spec.labels."+k, "label "+k+" cannot be made for element "+quote(e.Name)+fromProducer(e)+": "+cleanTmplErr(err),
				"a label pattern may use only the element's fields"))
			continue
		}
		out[k] = got
	}
	return out, ds
}

// execPattern executes pattern (a Go template when it holds "{{") over vars.
func execPattern(name, pattern string, vars map[string]any) (string, error) {
	if !strings.Contains(pattern, "{{") {
		return pattern, nil
	}
	t, err := template.New(name).Option("missingkey=error").Parse(pattern)
	if err != nil {
		return "", err
	}
	var b bytes.Buffer
	if err := t.Execute(&b, vars); err != nil {
		return "", err
	}
	return b.String(), nil
}
