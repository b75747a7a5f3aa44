package main

import (
	"fmt"
	"regexp"
	"sort"
	"strconv"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"
)

// refs are the dependency outputs and inputs a unit's files read
// (dependency.NAME.outputs.PATH, dependency.NAME.inputs.PATH), as trees.
type refs map[string]*depRefs

// depRefs are what the files read of one dependency.
type depRefs struct{ outputs, inputs node }

// node is one step of a path: a leaf (the path itself is read),
// attributes below it, list elements below it.
type node struct {
	attrs map[string]*node
	elems map[int]*node
}

func (r refs) add(t hcl.Traversal) {
	if len(t) < 2 || t.RootName() != "dependency" {
		return
	}
	dep, ok := t[1].(hcl.TraverseAttr)
	if !ok {
		return
	}
	d := r[dep.Name]
	if d == nil {
		d = &depRefs{}
		r[dep.Name] = d
	}
	if len(t) < 3 {
		return
	}
	a, ok := t[2].(hcl.TraverseAttr)
	if !ok {
		return
	}
	n := &d.outputs
	switch a.Name {
	case "outputs":
	case "inputs":
		n = &d.inputs
	default:
		return
	}
	for _, step := range t[3:] {
		if n = n.child(step); n == nil {
			return
		}
	}
}

func (n *node) child(step hcl.Traverser) *node {
	switch s := step.(type) {
	case hcl.TraverseAttr:
		return n.attr(s.Name)
	case hcl.TraverseIndex:
		if s.Key.Type() == cty.String {
			return n.attr(s.Key.AsString())
		}
		if s.Key.Type() == cty.Number {
			if i, acc := s.Key.AsBigFloat().Int64(); acc == 0 && i >= 0 && i < 1000 {
				if n.elems == nil {
					n.elems = map[int]*node{}
				}
				if n.elems[int(i)] == nil {
					n.elems[int(i)] = &node{}
				}
				return n.elems[int(i)]
			}
		}
	}
	return nil
}

func (n *node) attr(name string) *node {
	if n.attrs == nil {
		n.attrs = map[string]*node{}
	}
	if n.attrs[name] == nil {
		n.attrs[name] = &node{}
	}
	return n.attrs[name]
}

// value is what dependency evaluates to: for each dependency an object
// with outputs and inputs, whose every path read is a marker naming it.
func (r refs) value() cty.Value {
	deps := map[string]cty.Value{}
	for name, d := range r {
		deps[name] = cty.ObjectVal(map[string]cty.Value{
			"outputs": d.outputs.object("dependency", name),
			"inputs":  d.inputs.object("dependency-inputs", name),
		})
	}
	return cty.ObjectVal(deps)
}

func (n *node) object(kind, dep string) cty.Value {
	vals := map[string]cty.Value{}
	for k, c := range n.attrs {
		vals[k] = c.value(kind, dep, k)
	}
	return cty.ObjectVal(vals)
}

func (n *node) value(kind, dep, path string) cty.Value {
	switch {
	case len(n.elems) > 0:
		max := 0
		for i := range n.elems {
			max = maxInt(max, i)
		}
		vals := make([]cty.Value, max+1)
		for i := range vals {
			c := n.elems[i]
			if c == nil {
				c = &node{}
			}
			vals[i] = c.value(kind, dep, fmt.Sprintf("%s[%d]", path, i))
		}
		return cty.TupleVal(vals)
	case len(n.attrs) > 0:
		vals := map[string]cty.Value{}
		for k, c := range n.attrs {
			vals[k] = c.value(kind, dep, path+"."+k)
		}
		return cty.ObjectVal(vals)
	}
	return cty.StringVal(marker(kind, dep+"."+path))
}

func maxInt(a, b int) int {
	if a > b {
		return a
	}
	return b
}

var markerRe = regexp.MustCompile(regexp.QuoteMeta(markerTag) + "([^\x00]*)\x00([^\x00]*)\x00")

// found is a marker met in an evaluated value: what stood in (a
// neutralised function's name, or "dependency") and its detail.
type found struct{ kind, detail string }

// findMarkers lists the markers anywhere in v (a value decoded from cty
// into Go: strings, maps, slices), sorted and without repeats.
func findMarkers(v any) []found {
	seen := map[found]bool{}
	var walk func(any)
	walk = func(v any) {
		switch t := v.(type) {
		case string:
			for _, m := range markerRe.FindAllStringSubmatch(t, -1) {
				seen[found{m[1], m[2]}] = true
			}
		case map[string]any:
			for _, e := range t {
				walk(e)
			}
		case []any:
			for _, e := range t {
				walk(e)
			}
		}
	}
	walk(v)
	out := make([]found, 0, len(seen))
	for f := range seen {
		out = append(out, f)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].kind != out[j].kind {
			return out[i].kind < out[j].kind
		}
		return out[i].detail < out[j].detail
	})
	return out
}

var wholeRef = regexp.MustCompile(`^` + regexp.QuoteMeta(markerTag) + "dependency\x00([^.\x00]+)\\.([A-Za-z_][A-Za-z0-9_-]*)(\\[(\\d+)\\])?\x00$")

// asRef is the dependency output v is exactly (an input knit carries as
// valueFrom), if it is one.
func asRef(v any) (OutputRef, bool) {
	s, ok := v.(string)
	if !ok {
		return OutputRef{}, false
	}
	m := wholeRef.FindStringSubmatch(s)
	if m == nil {
		return OutputRef{}, false
	}
	r := OutputRef{Dependency: m[1], Output: m[2]}
	if m[4] != "" {
		i, _ := strconv.Atoi(m[4])
		r.Index = &i
	}
	return r, true
}

var wholeInput = regexp.MustCompile(`^` + regexp.QuoteMeta(markerTag) + "dependency-inputs\x00([^.\x00]+)\\.([^.\x00\\[]+)\x00$")

// asInputRef is the dependency input v is exactly, if it is one.
func asInputRef(v any) (InputRef, bool) {
	s, ok := v.(string)
	if !ok {
		return InputRef{}, false
	}
	m := wholeInput.FindStringSubmatch(s)
	if m == nil {
		return InputRef{}, false
	}
	return InputRef{Dependency: m[1], Input: m[2]}, true
}
