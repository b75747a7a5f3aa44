package spec

import (
	"fmt"
	"maps"
	"path"
	"regexp"
	"strings"

	"gopkg.in/yaml.v3"
)

// Generators of an EnvironmentSet: how each is decoded, and the elements
// it yields over SetInputs.

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
		"environments": func(v *yaml.Node, ep string) {
			set++
			d.environmentsGenerator(g)(v, ep)
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
		d.errorf(n, p, "write one of list:, gitBranches:, environments: or matrix:", "a generator is exactly one of list, gitBranches, environments or matrix (found %d)", set)
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

// elements evaluates g over in.
func (g *Generator) elements(in SetInputs) []SetElement {
	switch {
	case g.Environments != nil:
		return g.environmentElements(in.Environments)
	case g.GitBranches != nil:
		var out []SetElement
		for _, b := range in.Branches {
			if ok, _ := path.Match(g.GitBranches.Pattern, b); ok {
				out = append(out, SetElement{path: g.path, Vars: map[string]any{"branch": map[string]any{"name": b, "slug": Slug(b)}}})
			}
		}
		return out
	case g.Matrix != nil:
		var out []SetElement
		for _, a := range g.Matrix[0].elements(in) {
			for _, b := range g.Matrix[1].elements(in) {
				e := SetElement{path: a.path, Vars: maps.Clone(a.Vars), Params: maps.Clone(a.Params), Producer: a.Producer}
				if e.Producer == "" {
					e.Producer = b.Producer
				}
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
