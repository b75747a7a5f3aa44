package spec

import (
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strings"

	"gopkg.in/yaml.v3"
)

// Selector picks environments by their metadata.labels, as a Kubernetes
// label selector does: every MatchLabels pair and every MatchExpressions
// requirement must hold. An empty selector is refused when decoded (it
// would pick every environment).
type Selector struct {
	MatchLabels      map[string]string     `json:"matchLabels,omitempty"`
	MatchExpressions []SelectorRequirement `json:"matchExpressions,omitempty"`
}

// SelectorRequirement is one matchExpressions entry: Key's value is In (or
// NotIn) Values, or the key Exists.
type SelectorRequirement struct {
	Key      string   `json:"key"`
	Operator string   `json:"operator"`
	Values   []string `json:"values,omitempty"`
}

// Selector operators.
const (
	OpIn     = "In"
	OpNotIn  = "NotIn"
	OpExists = "Exists"
)

// Matches reports whether labels satisfy every part of s. A NotIn holds
// for labels without the key, as in Kubernetes.
func (s Selector) Matches(labels map[string]string) bool {
	for k, v := range s.MatchLabels {
		if got, ok := labels[k]; !ok || got != v {
			return false
		}
	}
	for _, r := range s.MatchExpressions {
		got, ok := labels[r.Key]
		switch r.Operator {
		case OpIn:
			if !ok || !slices.Contains(r.Values, got) {
				return false
			}
		case OpNotIn:
			if ok && slices.Contains(r.Values, got) {
				return false
			}
		case OpExists:
			if !ok {
				return false
			}
		default:
			return false // never decoded: validation refuses it
		}
	}
	return true
}

// String is the selector as a person reads it: "role=cluster, tier in (a,b)".
func (s Selector) String() string {
	var parts []string
	keys := make([]string, 0, len(s.MatchLabels))
	for k := range s.MatchLabels {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		parts = append(parts, k+"="+s.MatchLabels[k])
	}
	for _, r := range s.MatchExpressions {
		switch r.Operator {
		case OpExists:
			parts = append(parts, r.Key)
		case OpNotIn:
			parts = append(parts, fmt.Sprintf("%s notin (%s)", r.Key, strings.Join(r.Values, ",")))
		default:
			parts = append(parts, fmt.Sprintf("%s in (%s)", r.Key, strings.Join(r.Values, ",")))
		}
	}
	return strings.Join(parts, ", ")
}

// labelKey and labelValue are what a selector may name: Kubernetes' label
// syntax (an optional DNS prefix and "/", a name of at most 63 characters).
var (
	labelName  = regexp.MustCompile(`^[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$`)
	labelValue = regexp.MustCompile(`^([A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?)?$`)
	dnsPrefix  = regexp.MustCompile(`^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$`)
)

// labelKeyProblem says what is wrong with a label key ("" when nothing).
func labelKeyProblem(k string) string {
	name := k
	if prefix, rest, ok := strings.Cut(k, "/"); ok {
		if !dnsPrefix.MatchString(prefix) {
			return fmt.Sprintf("the label key %s has an invalid prefix (a DNS name such as example.com)", quote(k))
		}
		name = rest
	}
	if !labelName.MatchString(name) {
		return fmt.Sprintf("%s is not a label key (letters, digits, '-', '_', '.', at most 63, starting and ending with a letter or digit)", quote(k))
	}
	return ""
}

// selector decodes a label selector at path p, checking every part.
func (d *decoder) selector(dst *Selector) field {
	return func(v *yaml.Node, p string) {
		n := resolve(v)
		if n == nil || n.Kind != yaml.MappingNode {
			d.mismatch(v, p, "write selector: {matchLabels: {KEY: VALUE}}", "expected a mapping, found %s", kindName(v))
			return
		}
		written := 0 // parts written, valid or not: an invalid one is reported alone
		d.mapping(n, p, false, map[string]field{
			"matchLabels": func(v *yaml.Node, lp string) { written += d.matchLabels(v, lp, dst) },
			"matchExpressions": func(v *yaml.Node, ep string) {
				d.sequence(v, ep, func(_ int, item *yaml.Node, ip string) {
					written++
					if r, ok := d.requirement(item, ip); ok {
						dst.MatchExpressions = append(dst.MatchExpressions, r)
					}
				})
			},
		})
		if written == 0 && !d.bad[p] {
			d.errorf(n, p, "add matchLabels: {role: cluster} (or matchExpressions)", "an empty selector would select every environment")
		}
	}
}

// matchLabels decodes matchLabels into dst, returning how many pairs
// are written (valid or not).
func (d *decoder) matchLabels(v *yaml.Node, p string, dst *Selector) int {
	m, n := d.labelMap(v, p, "matchLabels", false)
	if m != nil {
		dst.MatchLabels = m
	}
	return n
}

// labelMap decodes a mapping of labels written at p (what names the
// field in the hint), each key and value checked as Kubernetes checks
// them; patterns lets a value be a pattern over a set's element
// ("{{ .region }}"), checked once executed. It returns the valid pairs
// (nil when v is no mapping) and how many pairs are written (1 for a
// value that is no mapping).
func (d *decoder) labelMap(v *yaml.Node, p, what string, patterns bool) (map[string]string, int) {
	n := resolve(v)
	if n == nil || n.Kind != yaml.MappingNode {
		d.mismatch(v, p, "write "+what+": {KEY: VALUE}", "expected a mapping, found %s", kindName(v))
		return nil, 1
	}
	out := map[string]string{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, val := n.Content[i], resolve(n.Content[i+1])
		kp := join(p, k.Value)
		d.pos[kp] = d.at(k)
		if why := labelKeyProblem(k.Value); why != "" {
			d.errorf(k, kp, "label keys are as Kubernetes writes them: role, example.com/tier", "%s", why)
			continue
		}
		if val == nil || val.Kind != yaml.ScalarNode || val.Tag == "!!null" {
			d.mismatch(n.Content[i+1], kp, `write the value as a string: role: "cluster"`, "expected a label value, found %s", kindName(n.Content[i+1]))
			continue
		}
		if !(patterns && strings.Contains(val.Value, "{{")) && !labelValue.MatchString(val.Value) {
			d.errorf(val, kp, "a label value is at most 63 letters, digits, '-', '_', '.'", "%s is not a label value", quote(val.Value))
			continue
		}
		out[k.Value] = val.Value
	}
	return out, len(n.Content) / 2
}

// requirement decodes one matchExpressions entry.
func (d *decoder) requirement(item *yaml.Node, p string) (SelectorRequirement, bool) {
	var r SelectorRequirement
	before := len(d.diags)
	d.mapping(item, p, false, map[string]field{
		"key":      d.str(&r.Key),
		"operator": d.str(&r.Operator),
		"values":   d.strList(&r.Values),
	})
	at := func(f string) *yaml.Node {
		pos := nearestIn(d.pos, join(p, f), d.file)
		return &yaml.Node{Line: pos.Line, Column: pos.Col}
	}
	switch {
	case r.Key == "":
		d.errorf(item, join(p, "key"), "add key: LABEL", "missing required field key")
	case labelKeyProblem(r.Key) != "":
		d.errorf(at("key"), join(p, "key"), "label keys are as Kubernetes writes them: role, example.com/tier", "%s", labelKeyProblem(r.Key))
	}
	switch r.Operator {
	case OpIn, OpNotIn:
		if len(r.Values) == 0 {
			d.errorf(at("operator"), join(p, "values"), "add values: [a, b]", "operator %s needs at least one value", r.Operator)
		}
	case OpExists:
		if len(r.Values) > 0 {
			d.errorf(at("values"), join(p, "values"), "remove values: Exists only asks for the key", "operator Exists takes no values")
		}
	case "":
		d.errorf(item, join(p, "operator"), "add operator: In, NotIn or Exists", "missing required field operator")
	default:
		d.errorf(at("operator"), join(p, "operator"), "write In, NotIn or Exists (as written, capitalised)", "unknown operator %s", quote(r.Operator))
	}
	return r, len(d.diags) == before
}
