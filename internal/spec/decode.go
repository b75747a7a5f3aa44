package spec

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"

	"knit.dev/knit/internal/diag"
)

// decoder walks a YAML node tree into the typed structs by hand, so that it
// can (a) record the position of every field for later diagnostics, (b)
// report every unknown or mistyped field rather than stopping at the first,
// and (c) never panic on hostile input.
type decoder struct {
	file  string
	diags diag.Diagnostics
	pos   map[string]diag.Pos
}

// field handles the value of one known key; path is the value's field path.
type field func(v *yaml.Node, path string)

func (d *decoder) at(n *yaml.Node) diag.Pos {
	return diag.Pos{File: d.file, Line: n.Line, Col: n.Column}
}

func (d *decoder) errorf(n *yaml.Node, path, hint, format string, args ...any) {
	d.diags = append(d.diags, diag.Diagnostic{
		Severity: diag.Error, Pos: d.at(n), Field: path,
		Message: fmt.Sprintf(format, args...), Hint: hint,
	})
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

// kindName names a YAML node kind the way a person writing YAML thinks of it.
func kindName(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		if n.Tag == "!!null" {
			return "null"
		}
		return fmt.Sprintf("%q", n.Value)
	case yaml.AliasNode:
		return "an alias"
	}
	return "nothing"
}

// resolve follows aliases (bounded, so a self-referencing alias cannot loop).
func resolve(n *yaml.Node) *yaml.Node {
	for i := 0; n != nil && n.Kind == yaml.AliasNode && i < 32; i++ {
		n = n.Alias
	}
	return n
}

// mapping decodes a mapping node by dispatching each key to its handler.
// Unknown keys are errors with a "did you mean" hint, unless open is true.
func (d *decoder) mapping(n *yaml.Node, path string, open bool, fields map[string]field) {
	n = resolve(n)
	if n == nil {
		return
	}
	if n.Kind != yaml.MappingNode {
		if n.Tag == "!!null" {
			return
		}
		d.errorf(n, path, "", "expected a mapping, found %s", kindName(n))
		return
	}
	seen := map[string]bool{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		key := k.Value
		p := join(path, key)
		if seen[key] {
			d.errorf(k, p, "remove one of the two", "%q is set twice", key)
			continue
		}
		seen[key] = true
		h, ok := fields[key]
		if !ok {
			if !open {
				d.errorf(k, p, suggest(key, keys(fields)), "unknown field %q", key)
			}
			continue
		}
		d.pos[p] = d.at(k)
		h(v, p)
	}
}

func keys(m map[string]field) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// sequence calls each for every item of a list node.
func (d *decoder) sequence(n *yaml.Node, path string, each func(i int, item *yaml.Node, path string)) {
	n = resolve(n)
	if n == nil || n.Tag == "!!null" {
		return
	}
	if n.Kind != yaml.SequenceNode {
		d.errorf(n, path, "", "expected a list, found %s", kindName(n))
		return
	}
	for i, item := range n.Content {
		p := fmt.Sprintf("%s[%d]", path, i)
		d.pos[p] = d.at(item)
		each(i, item, p)
	}
}

func (d *decoder) scalar(n *yaml.Node, path string) (*yaml.Node, bool) {
	n = resolve(n)
	if n == nil {
		return nil, false
	}
	if n.Kind != yaml.ScalarNode {
		d.errorf(n, path, "", "expected a single value, found %s", kindName(n))
		return nil, false
	}
	return n, true
}

func (d *decoder) str(dst *string) field {
	return func(v *yaml.Node, path string) {
		if n, ok := d.scalar(v, path); ok && n.Tag != "!!null" {
			*dst = n.Value
		}
	}
}

func (d *decoder) boolean(dst *bool) field {
	return func(v *yaml.Node, path string) {
		n, ok := d.scalar(v, path)
		if !ok {
			return
		}
		b, err := strconv.ParseBool(n.Value)
		if err != nil || (n.Tag != "!!bool" && n.Tag != "!!str") {
			d.errorf(n, path, "write true or false", "expected true or false, found %q", n.Value)
			return
		}
		*dst = b
	}
}

func (d *decoder) optBool(dst **bool) field {
	return func(v *yaml.Node, path string) {
		var b bool
		before := len(d.diags)
		d.boolean(&b)(v, path)
		if len(d.diags) == before {
			*dst = &b
		}
	}
}

func (d *decoder) strList(dst *[]string) field {
	return func(v *yaml.Node, path string) {
		d.sequence(v, path, func(_ int, item *yaml.Node, p string) {
			if n, ok := d.scalar(item, p); ok {
				*dst = append(*dst, n.Value)
			}
		})
	}
}

func (d *decoder) strMap(dst *map[string]string) field {
	return func(v *yaml.Node, path string) {
		v = resolve(v)
		if v == nil || v.Kind != yaml.MappingNode {
			return
		}
		*dst = map[string]string{}
		for i := 0; i+1 < len(v.Content); i += 2 {
			(*dst)[v.Content[i].Value] = v.Content[i+1].Value
		}
	}
}

// value decodes any YAML value into plain Go values (string, bool, int64,
// float64, []any, map[string]any), keeping types so inputs arrive typed.
func (d *decoder) value(n *yaml.Node, path string, depth int) any {
	n = resolve(n)
	if n == nil {
		return nil
	}
	if depth > 64 {
		d.errorf(n, path, "", "value nested too deeply")
		return nil
	}
	switch n.Kind {
	case yaml.MappingNode:
		m := make(map[string]any, len(n.Content)/2)
		for i := 0; i+1 < len(n.Content); i += 2 {
			k := n.Content[i].Value
			m[k] = d.value(n.Content[i+1], join(path, k), depth+1)
		}
		return m
	case yaml.SequenceNode:
		l := make([]any, 0, len(n.Content))
		for i, item := range n.Content {
			l = append(l, d.value(item, fmt.Sprintf("%s[%d]", path, i), depth+1))
		}
		return l
	case yaml.ScalarNode:
		return scalarValue(n)
	}
	return nil
}

func scalarValue(n *yaml.Node) any {
	switch n.Tag {
	case "!!null":
		return nil
	case "!!bool":
		if b, err := strconv.ParseBool(strings.ToLower(n.Value)); err == nil {
			return b
		}
	case "!!int":
		if i, err := strconv.ParseInt(n.Value, 0, 64); err == nil {
			return i
		}
	case "!!float":
		if f, err := strconv.ParseFloat(n.Value, 64); err == nil {
			return f
		}
	}
	return n.Value
}
