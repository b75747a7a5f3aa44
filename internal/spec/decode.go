package spec

import (
	"encoding/json"
	"fmt"
	"math"
	"math/big"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

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
	// budget is how many more nodes the decoder may visit. Aliases let a
	// small file name a node many times over (a "billion laughs" file), so
	// visits are counted, not nodes written; see newDecoder.
	budget    int
	overspent bool
	// tooDeep is set once a value has been reported as nested too deeply,
	// so one runaway value yields one diagnostic.
	tooDeep bool
	// bad holds the field paths whose values could not be decoded; the
	// validator does not also call them missing.
	bad map[string]bool
}

// aliasAllowance is how many node visits beyond the file's own nodes alias
// expansion may add: plenty for anchors used to share a few values, far too
// few for an alias bomb to cost noticeable time or memory.
const aliasAllowance = 100_000

// maxMergeDepth bounds merge keys that merge maps that merge maps, so a
// mapping merging itself cannot loop.
const maxMergeDepth = 16

func newDecoder(file string, root *yaml.Node) *decoder {
	return &decoder{file: file, pos: map[string]diag.Pos{}, bad: map[string]bool{}, budget: 2*countNodes(root) + aliasAllowance}
}

// countNodes counts the nodes written in the file, not following aliases.
func countNodes(n *yaml.Node) int {
	if n == nil {
		return 0
	}
	c := 1
	for _, k := range n.Content {
		c += countNodes(k)
	}
	return c
}

// spend charges one node visit; once the budget is gone it reports the file
// once and every later visit is refused.
func (d *decoder) spend(n *yaml.Node) bool {
	if d.budget > 0 {
		d.budget--
		return true
	}
	if !d.overspent {
		d.overspent = true
		d.errorf(n, "", "use fewer aliases, or write the values out",
			"the file's aliases expand to too many values")
	}
	return false
}

// field handles the value of one known key; path is the value's field path.
type field func(v *yaml.Node, path string)

func (d *decoder) at(n *yaml.Node) diag.Pos {
	return diag.Pos{File: d.file, Line: n.Line, Col: n.Column}
}

// mismatch reports a value of the wrong kind at path and marks the path bad.
func (d *decoder) mismatch(n *yaml.Node, path, hint, format string, args ...any) {
	d.bad[path] = true
	d.errorf(n, path, hint, format, args...)
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
		return quote(n.Value)
	case yaml.AliasNode:
		return "an alias"
	}
	return "nothing"
}

// quote quotes a value written in the file for a message, shortened so a
// huge value cannot swamp the output.
func quote(s string) string {
	const max = 80
	if len(s) <= max {
		return strconv.Quote(s)
	}
	cut := max
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return strconv.Quote(s[:cut]) + "…"
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
	d.mappingHints(n, path, open, fields, nil)
}

// mappingHints is mapping with hints for unknown keys that are likely
// mistakes with a known fix, used where no "did you mean" applies.
func (d *decoder) mappingHints(n *yaml.Node, path string, open bool, fields map[string]field, hints map[string]string) {
	n = resolve(n)
	if n == nil || !d.spend(n) {
		return
	}
	if n.Kind != yaml.MappingNode {
		if n.Tag == "!!null" {
			return
		}
		d.mismatch(n, path, "", "expected a mapping, found %s", kindName(n))
		return
	}
	seen := map[string]bool{}
	for _, kv := range d.pairs(n, path, 0) {
		k, v := kv.k, kv.v
		key := k.Value
		p := join(path, key)
		if seen[key] {
			d.errorf(k, p, "remove one of the two", "%s is set twice", quote(key))
			continue
		}
		seen[key] = true
		h, ok := fields[key]
		if !ok {
			if !open {
				hint := suggest(key, keys(fields))
				if hint == "" {
					hint = hints[key]
				}
				d.errorf(k, p, hint, "unknown field %s", quote(key))
			}
			continue
		}
		d.pos[p] = d.at(k)
		h(v, p)
	}
}

// pair is one key and its value in a mapping.
type pair struct{ k, v *yaml.Node }

// pairs returns the entries of mapping n with YAML merge keys ("<<: *base"
// or "<<: [*a, *b]") expanded, as yaml.v3 and Kubernetes do: keys written in
// n come first and win; merged keys follow, the earlier source winning.
// Keys written twice in n are kept so that mapping can report them.
func (d *decoder) pairs(n *yaml.Node, path string, depth int) []pair {
	var out, merged []pair
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := resolve(n.Content[i]), n.Content[i+1]
		if k == nil {
			continue
		}
		if !d.spend(k) {
			break
		}
		if k.Kind == yaml.ScalarNode && k.Tag == "!!merge" {
			merged = append(merged, d.mergeSources(k, v, path, depth)...)
			continue
		}
		out = append(out, pair{k, v})
	}
	if len(merged) == 0 {
		return out
	}
	written := make(map[string]bool, len(out)+len(merged))
	for _, p := range out {
		written[p.k.Value] = true
	}
	for _, p := range merged {
		if !written[p.k.Value] {
			written[p.k.Value] = true
			out = append(out, p)
		}
	}
	return out
}

// mergeSources returns the entries a merge key's value contributes.
func (d *decoder) mergeSources(k, v *yaml.Node, path string, depth int) []pair {
	if depth >= maxMergeDepth {
		d.errorf(k, path, "", "merge keys (<<) nested too deeply")
		return nil
	}
	v = resolve(v)
	if v == nil || !d.spend(v) {
		return nil
	}
	var sources []*yaml.Node
	switch v.Kind {
	case yaml.MappingNode:
		sources = []*yaml.Node{v}
	case yaml.SequenceNode:
		sources = v.Content
	}
	if sources == nil {
		d.errorf(k, path, "write <<: *anchor, or <<: [*a, *b]", "a merge key (<<) needs a mapping or a list of mappings, found %s", kindName(v))
		return nil
	}
	var out []pair
	for _, src := range sources {
		src = resolve(src)
		if src == nil || !d.spend(src) {
			return out
		}
		if src.Kind != yaml.MappingNode {
			d.errorf(src, path, "write <<: *anchor, or <<: [*a, *b]", "a merge key (<<) can merge only mappings, found %s", kindName(src))
			continue
		}
		out = append(out, d.pairs(src, path, depth+1)...)
	}
	return out
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
	if n == nil || n.Tag == "!!null" || !d.spend(n) {
		return
	}
	if n.Kind != yaml.SequenceNode {
		d.mismatch(n, path, "", "expected a list, found %s", kindName(n))
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
	if n == nil || !d.spend(n) {
		return nil, false
	}
	if n.Kind != yaml.ScalarNode {
		d.mismatch(n, path, "", "expected a single value, found %s", kindName(n))
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
			d.mismatch(n, path, "write true or false", "expected true or false, found %s", quote(n.Value))
			return
		}
		*dst = b
	}
}

func (d *decoder) integer(dst *int) field {
	return func(v *yaml.Node, path string) {
		n, ok := d.scalar(v, path)
		if !ok {
			return
		}
		i, err := strconv.Atoi(n.Value)
		if err != nil || (n.Tag != "!!int" && n.Tag != "!!str") {
			d.mismatch(n, path, "write a whole number", "expected a whole number, found %s", quote(n.Value))
			return
		}
		*dst = i
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
// float64, []any, map[string]any), keeping types so inputs arrive typed. An
// integer too large for int64 becomes a json.Number, so no digit is lost.
func (d *decoder) value(n *yaml.Node, path string, depth int) any {
	n = resolve(n)
	if n == nil || !d.spend(n) {
		return nil
	}
	if depth == 0 {
		d.tooDeep = false
	}
	if depth > maxValueDepth {
		if !d.tooDeep {
			d.tooDeep = true
			d.errorf(n, path, "", "value nested too deeply (more than %d levels)", maxValueDepth)
		}
		return nil
	}
	switch n.Kind {
	case yaml.MappingNode:
		m := make(map[string]any, len(n.Content)/2)
		for _, kv := range d.pairs(n, path, 0) {
			k := kv.k.Value
			// Where each key is, so that what checks a value (a chart's
			// values schema) can point at it.
			d.pos[join(path, k)] = d.at(kv.k)
			m[k] = d.value(kv.v, join(path, k), depth+1)
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

// maxValueDepth bounds how deeply a variable's value may nest.
const maxValueDepth = 64

var bigInt = regexp.MustCompile(`^[-+]?[0-9][0-9_]*$`)

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
		// yaml.v3 calls an integer beyond int64 a float; as a float64 it would lose digits.
		if bigInt.MatchString(n.Value) {
			if i, ok := new(big.Int).SetString(strings.ReplaceAll(n.Value, "_", ""), 10); ok && !i.IsInt64() {
				return json.Number(i.String())
			}
		}
		if f, err := strconv.ParseFloat(n.Value, 64); err == nil && !math.IsInf(f, 0) && !math.IsNaN(f) {
			return f
		}
	}
	return n.Value
}
