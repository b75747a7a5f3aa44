package kube

import (
	"encoding/json"
	"fmt"
	"reflect"
	"sort"
	"strconv"
	"strings"

	"knit.dev/knit/internal/runner"
)

// Masked stands for a value a plan must not show, as every runner shows it.
const Masked = runner.MaskedValue

// absent is how a value that does not exist on one side is shown.
const absent = "(none)"

// DiffOptions say which values of an object a diff must mask.
type DiffOptions struct {
	// Secret masks every value under data and stringData (a Secret's).
	Secret bool
	// Sensitive are secret strings (the values of sensitive inputs): a value
	// holding one is masked.
	Sensitive []string
}

// ObjectDiffOptions returns the masking for obj's kind with the sensitive strings.
func ObjectDiffOptions(kind string, sensitive []string) DiffOptions {
	return DiffOptions{Secret: kind == "Secret", Sensitive: sensitive}
}

// ignored are the fields the server maintains itself, which differ between
// a live object and a dry-run result without anyone changing anything.
var ignored = map[string]bool{
	"metadata.managedFields": true, "metadata.resourceVersion": true, "metadata.generation": true,
	"metadata.creationTimestamp": true, "metadata.uid": true, "metadata.selfLink": true, "status": true,
}

// ValueChanges lists the values that differ between a (live) and b (what
// the object would become), sorted by path. A path names list entries by
// their merge key where they have one (containers[web], env[GREETING],
// ports[8080]) and by index otherwise; an env-style {name, value} entry is
// shown as its value (env[GREETING]: a → b). A map or list on one side
// only is one change.
func ValueChanges(a, b map[string]any, o DiffOptions) []runner.ValueChange {
	var out []runner.ValueChange
	d := differ{o: o, out: &out}
	d.value("", a, b)
	sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out
}

// Paths returns the paths of changes.
func Paths(changes []runner.ValueChange) []string {
	out := make([]string, len(changes))
	for i, c := range changes {
		out[i] = c.Path
	}
	return out
}

type differ struct {
	o   DiffOptions
	out *[]runner.ValueChange
}

func (d differ) value(path string, a, b any) {
	if ignored[path] {
		return
	}
	am, aMap := a.(map[string]any)
	bm, bMap := b.(map[string]any)
	if (aMap && b == nil) || (a == nil && bMap) {
		// A map on one side only: each of its values, so removals are named.
		for _, k := range keys(am, bm) {
			d.value(path+"."+k, am[k], bm[k])
		}
		return
	}
	switch av := a.(type) {
	case map[string]any:
		bv, ok := b.(map[string]any)
		if !ok {
			d.add(path, a, b)
			return
		}
		for _, k := range keys(av, bv) {
			p := k
			if path != "" {
				p = path + "." + k
			}
			d.value(p, av[k], bv[k])
		}
	case []any:
		bv, ok := b.([]any)
		if !ok {
			d.add(path, a, b)
			return
		}
		if key := mergeKey(av, bv); key != "" {
			d.keyedList(path, key, av, bv)
			return
		}
		if len(av) != len(bv) {
			d.add(path, a, b)
			return
		}
		for i := range av {
			d.value(path+"["+strconv.Itoa(i)+"]", av[i], bv[i])
		}
	default:
		if !reflect.DeepEqual(a, b) {
			d.add(path, a, b)
		}
	}
}

// keyedList matches the entries of two lists by their merge key.
func (d differ) keyedList(path, key string, a, b []any) {
	index := func(l []any) map[string]map[string]any {
		m := map[string]map[string]any{}
		for _, e := range l {
			em := e.(map[string]any)
			m[display(em[key])] = em
		}
		return m
	}
	am, bm := index(a), index(b)
	for _, n := range keys(am, bm) {
		p := path + "[" + n + "]"
		ae, aok := am[n]
		be, bok := bm[n]
		switch {
		case !aok || !bok:
			d.add(p, nilIfAbsent(ae, aok), nilIfAbsent(be, bok))
		case key == "name" && nameValue(ae) && nameValue(be):
			d.value(p, ae["value"], be["value"])
			d.value(p+".valueFrom", ae["valueFrom"], be["valueFrom"])
		default:
			d.value(p, ae, be)
		}
	}
}

func nilIfAbsent(m map[string]any, ok bool) any {
	if !ok {
		return nil
	}
	return m
}

// mergeKeys are the keys Kubernetes merges lists of objects by, in order of preference.
var mergeKeys = []string{"name", "mountPath", "devicePath", "containerPort", "port", "ip"}

// mergeKey returns the key every entry of a and b carries, unique on each
// side, or "" when the lists are not keyed.
func mergeKey(a, b []any) string {
	for _, k := range mergeKeys {
		if keyedBy(a, k) && keyedBy(b, k) && (len(a) > 0 || len(b) > 0) {
			return k
		}
	}
	return ""
}

func keyedBy(l []any, key string) bool {
	seen := map[string]bool{}
	for _, e := range l {
		m, ok := e.(map[string]any)
		if !ok || m[key] == nil || seen[display(m[key])] {
			return false
		}
		seen[display(m[key])] = true
	}
	return true
}

// nameValue reports whether m is an env-style entry: name with value or valueFrom.
func nameValue(m map[string]any) bool {
	for k := range m {
		if k != "name" && k != "value" && k != "valueFrom" {
			return false
		}
	}
	return true
}

func (d differ) add(path string, a, b any) {
	c := runner.ValueChange{Path: path, Old: display(a), New: display(b)}
	if d.masked(path, c) {
		c.Sensitive = true
		if a != nil {
			c.Old = Masked
		}
		if b != nil {
			c.New = Masked
		}
	}
	*d.out = append(*d.out, c)
}

func (d differ) masked(path string, c runner.ValueChange) bool {
	if d.o.Secret && (path == "data" || path == "stringData" || strings.HasPrefix(path, "data.") || strings.HasPrefix(path, "stringData.")) {
		return true
	}
	for _, s := range d.o.Sensitive {
		if s != "" && (strings.Contains(c.Old, s) || strings.Contains(c.New, s)) {
			return true
		}
	}
	return false
}

// keys returns the keys of a and b, each once, sorted.
func keys[V any](a, b map[string]V) []string {
	seen := map[string]bool{}
	for k := range a {
		seen[k] = true
	}
	for k := range b {
		seen[k] = true
	}
	out := make([]string, 0, len(seen))
	for k := range seen {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// maxDisplay bounds how much of a map or list a change shows.
const maxDisplay = 80

// display renders a value for a person: scalars as they are, "" quoted,
// maps and lists as compact JSON, cut at maxDisplay characters.
func display(v any) string {
	switch x := v.(type) {
	case nil:
		return absent
	case string:
		if x == "" {
			return `""`
		}
		return x
	case map[string]any, []any:
		b, err := json.Marshal(x)
		if err != nil {
			return fmt.Sprint(x)
		}
		if s := string(b); len(s) > maxDisplay {
			return s[:maxDisplay] + "…"
		}
		return string(b)
	}
	return fmt.Sprint(v)
}

// SensitiveStrings returns the string values of the inputs named in
// sensitive, for masking them in diffs.
func SensitiveStrings(in map[string]any, sensitive map[string]bool) []string {
	var out []string
	for name := range sensitive {
		if s, ok := in[name].(string); ok && s != "" {
			out = append(out, s)
		}
	}
	sort.Strings(out)
	return out
}
