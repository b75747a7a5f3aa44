package spec

import (
	"encoding/json"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"

	"knit.dev/knit/internal/diag"
)

// paramRef is a reference to a template parameter inside a string.
var paramRef = regexp.MustCompile(`\$\{param\.([A-Za-z0-9_-]*)\}`)

// wholeParamRef is a string that is nothing but one reference: its value
// keeps the parameter's type.
var wholeParamRef = regexp.MustCompile(`^\$\{param\.([A-Za-z0-9_-]*)\}$`)

var paramName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_-]*$`)

// typeOf names the parameter type of a decoded YAML value ("null" for none).
func typeOf(v any) string {
	switch v.(type) {
	case string:
		return ParamString
	case bool:
		return ParamBool
	case int64, float64, json.Number:
		return ParamNumber
	case []any:
		return ParamList
	case map[string]any:
		return ParamMap
	}
	return "null"
}

// checkValue reports why v does not fit prm ("" when it does).
func (prm *Parameter) checkValue(v any) string {
	if t := typeOf(v); t != prm.Type {
		return fmt.Sprintf("parameter %q is a %s, found a %s (%s)", prm.Name, prm.Type, t, shortValue(v))
	}
	if len(prm.Enum) > 0 {
		ok := false
		for _, e := range prm.Enum {
			ok = ok || shortValue(e) == shortValue(v)
		}
		if !ok {
			var opts []string
			for _, e := range prm.Enum {
				opts = append(opts, shortValue(e))
			}
			return fmt.Sprintf("parameter %q must be one of %s, found %s", prm.Name, strings.Join(opts, ", "), shortValue(v))
		}
	}
	if s, ok := v.(string); ok && prm.Pattern != "" {
		if re, err := regexp.Compile("^(?:" + prm.Pattern + ")$"); err == nil && !re.MatchString(s) {
			return fmt.Sprintf("parameter %q must match %s, found %s", prm.Name, quote(prm.Pattern), quote(s))
		}
	}
	return ""
}

// shortValue renders a value for a message.
func shortValue(v any) string {
	if s, ok := v.(string); ok {
		return quote(s)
	}
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return quote(string(b))[1 : len(quote(string(b)))-1]
}

// checkParameters checks a template's declarations: names, types,
// patterns, enums and defaults.
func checkParameters(t *templateFile) diag.Diagnostics {
	var ds diag.Diagnostics
	seen := map[string]bool{}
	for _, prm := range t.params {
		at := func(sub, msg, hint string) {
			ds = append(ds, t.errAt(join(prm.path, sub), msg, hint))
		}
		switch {
		case prm.Name == "":
			at("", "missing required field name", "")
			continue
		case !paramName.MatchString(prm.Name):
			at("name", fmt.Sprintf("parameter name %s is not a name", quote(prm.Name)), "use letters, digits, _ and -")
		case seen[prm.Name]:
			at("name", fmt.Sprintf("parameter %q is declared twice", prm.Name), "remove one of them")
		}
		seen[prm.Name] = true
		switch prm.Type {
		case ParamString, ParamNumber, ParamBool, ParamList, ParamMap:
		case "":
			at("", "missing required field type", "type is one of string, number, bool, list, map")
			continue
		default:
			at("type", fmt.Sprintf("unknown parameter type %s", quote(prm.Type)), "type is one of string, number, bool, list, map")
			continue
		}
		if prm.Pattern != "" {
			if prm.Type != ParamString {
				at("pattern", "a pattern applies only to a string parameter", "")
			} else if _, err := regexp.Compile(prm.Pattern); err != nil {
				at("pattern", "invalid pattern: "+err.Error(), "write a Go regular expression")
			}
		}
		for i, e := range prm.Enum {
			if typeOf(e) != prm.Type {
				at(fmt.Sprintf("enum[%d]", i), fmt.Sprintf("enum value %s is not a %s", shortValue(e), prm.Type), "")
			}
		}
		if prm.hasDefault && prm.Default != nil {
			if msg := prm.checkValue(prm.Default); msg != "" {
				at("default", "default: "+msg, "")
			}
		}
	}
	return ds
}

// bindParameters works out every parameter's value: the environment's
// spec.parameters, else the default. Problems of a value are reported
// where the environment writes it.
func bindParameters(env *Environment, t *templateFile) (values map[string]any, failed map[string]bool, ds diag.Diagnostics) {
	declared := map[string]*Parameter{}
	var names []string
	for _, prm := range t.params {
		if prm.Name != "" && declared[prm.Name] == nil {
			declared[prm.Name] = prm
			names = append(names, prm.Name)
		}
	}
	values, failed = map[string]any{}, map[string]bool{}
	var given []string
	for k := range env.Spec.Parameters {
		given = append(given, k)
	}
	sort.Strings(given)
	for _, k := range given {
		v, p := env.Spec.Parameters[k], "spec.parameters."+k
		prm := declared[k]
		if prm == nil {
			hint := suggest(k, names)
			if hint == "" {
				hint = "the template declares " + orNone(names)
			}
			ds = append(ds, errAt(env, p, "", fmt.Sprintf("unknown parameter %q: the template %s does not declare it", k, t.name), hint))
			continue
		}
		if known(prm.Type) {
			if msg := prm.checkValue(v); msg != "" {
				ds = append(ds, errAt(env, p, "", msg, prm.Description))
				failed[k] = true
				continue
			}
		}
		values[k] = v
	}
	for _, prm := range t.params {
		if _, ok := values[prm.Name]; ok || prm.Name == "" {
			continue
		}
		if _, bad := env.Spec.Parameters[prm.Name]; bad {
			continue // reported above
		}
		switch {
		case env.selfCheck && (prm.Required || !prm.hasDefault):
			// A template checked on its own: every environment using it sets the parameter.
			values[prm.Name] = placeholder(prm)
			if env.placeholders == nil {
				env.placeholders = map[string]bool{}
			}
			env.placeholders[prm.Name] = true
		case prm.Required:
			failed[prm.Name] = true
			hint := "add " + prm.Name + ": VALUE under spec.parameters"
			if prm.Description != "" {
				hint += " (" + prm.Description + ")"
			}
			ds = append(ds, errAt(env, "spec.parameters", "", fmt.Sprintf("missing required parameter %q of the template %s", prm.Name, t.name), hint))
		case prm.hasDefault:
			values[prm.Name] = prm.Default
		}
	}
	ds = append(ds, promote(env, t, declared, values)...)
	return values, failed, ds
}

// promote replaces the values of promote: true parameters with a
// release's (Options.Promote), and records them all in env.Promoted.
func promote(env *Environment, t *templateFile, declared map[string]*Parameter, values map[string]any) diag.Diagnostics {
	var ds diag.Diagnostics
	var names []string
	for k := range env.opts.Promote {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		prm := declared[k]
		if prm == nil || !prm.Promote {
			ds = append(ds, errAt(env, "spec.template", "", fmt.Sprintf("the release sets parameter %q, which the template %s does not mark promote: true", k, t.name),
				"a release carries only the template's promote: true parameters"))
			continue
		}
		v := env.opts.Promote[k]
		if msg := prm.checkValue(v); msg != "" {
			ds = append(ds, errAt(env, "spec.template", "", "release: "+msg, prm.Description))
			continue
		}
		values[k] = v
	}
	for _, prm := range t.params {
		if v, ok := values[prm.Name]; ok && prm.Promote {
			if env.Promoted == nil {
				env.Promoted = map[string]any{}
			}
			env.Promoted[prm.Name] = v
		}
	}
	return ds
}

// placeholder is a value of prm's type for checking a template on its own.
func placeholder(prm *Parameter) any {
	if len(prm.Enum) > 0 {
		return prm.Enum[0]
	}
	switch prm.Type {
	case ParamNumber:
		return int64(0)
	case ParamBool:
		return false
	case ParamList:
		return []any{}
	case ParamMap:
		return map[string]any{}
	}
	return "x"
}

func known(t string) bool {
	switch t {
	case ParamString, ParamNumber, ParamBool, ParamList, ParamMap:
		return true
	}
	return false
}

func orNone(names []string) string {
	if len(names) == 0 {
		return "no parameters"
	}
	return strings.Join(names, ", ")
}

// substitute replaces every ${param.NAME} in the strings of the tree at n
// (aliases' targets are in the tree, so they are not followed), before the
// tree is decoded: a value that is only the reference becomes the
// parameter's value with its type, at the reference's position.
// Parameters in failed were reported already: their references stay quiet.
//
// Each line that uses a parameter is noted in via ("file:line" → where
// the parameter's value was written).
func substitute(t *templateFile, n *yaml.Node, values map[string]any, declared, failed map[string]bool, via func(line int, name string)) diag.Diagnostics {
	var ds diag.Diagnostics
	seen := map[*yaml.Node]bool{}
	budget, overspent := aliasAllowance, false
	var walk func(n *yaml.Node)
	walk = func(n *yaml.Node) {
		if n == nil || seen[n] || n.Kind == yaml.AliasNode {
			return
		}
		seen[n] = true
		if n.Kind != yaml.ScalarNode {
			for _, c := range n.Content {
				walk(c)
			}
			return
		}
		if n.Tag != "!!str" || !strings.Contains(n.Value, "${param.") {
			return
		}
		at := diag.Pos{File: t.name, Line: n.Line, Col: n.Column}
		fail := func(msg, hint string) {
			ds = append(ds, diag.Diagnostic{Severity: diag.Error, Pos: at, Message: msg, Hint: hint})
		}
		lookup := func(name string) (any, bool) {
			v, ok := values[name]
			switch {
			case ok:
				via(n.Line, name)
				return v, true
			case failed[name]:
			case declared[name]:
				fail(fmt.Sprintf("parameter %q has no value", name), "set it under spec.parameters of the environment, or give it a default")
			default:
				hint := "declare it under spec.parameters, or fix the name"
				if s := suggest(name, slices.Sorted(maps.Keys(declared))); s != "" {
					hint = s + " " + hint
				}
				fail(fmt.Sprintf("${param.%s}: the template declares no parameter %q", name, name), hint)
			}
			return nil, false
		}
		if m := wholeParamRef.FindStringSubmatch(n.Value); m != nil {
			v, ok := lookup(m[1])
			if !ok {
				return
			}
			// Like aliases, references copy a value many times over: bounded.
			if budget -= countValue(v); budget < 0 {
				if !overspent {
					overspent = true
					fail("the template's parameter references expand to too many values", "reference large list or map parameters fewer times")
				}
				return
			}
			*n = *valueNode(v, n.Line, n.Column)
			return
		}
		n.Value = paramRef.ReplaceAllStringFunc(n.Value, func(ref string) string {
			name := paramRef.FindStringSubmatch(ref)[1]
			v, ok := lookup(name)
			if !ok {
				return ref
			}
			switch x := v.(type) {
			case string:
				return x
			case []any, map[string]any:
				fail(fmt.Sprintf("parameter %q is a %s: it can only be a whole value", name, typeOf(v)),
					"write the reference alone: value: \"${param."+name+"}\"")
				return ref
			case nil:
				return ""
			default:
				return strings.Trim(shortValue(x), `"`)
			}
		})
	}
	walk(n)
	return ds
}

// countValue counts the nodes valueNode would build for v.
func countValue(v any) int {
	n := 1
	switch x := v.(type) {
	case []any:
		for _, e := range x {
			n += countValue(e)
		}
	case map[string]any:
		for _, e := range x {
			n += 1 + countValue(e)
		}
	}
	return n
}

// valueNode builds the YAML node of a decoded value, every node at line:col.
func valueNode(v any, line, col int) *yaml.Node {
	n := &yaml.Node{Kind: yaml.ScalarNode, Line: line, Column: col}
	switch x := v.(type) {
	case nil:
		n.Tag, n.Value = "!!null", "null"
	case string:
		n.Tag, n.Value = "!!str", x
	case bool:
		n.Tag, n.Value = "!!bool", strconv.FormatBool(x)
	case int64:
		n.Tag, n.Value = "!!int", strconv.FormatInt(x, 10)
	case float64:
		n.Tag, n.Value = "!!float", strconv.FormatFloat(x, 'g', -1, 64)
	case json.Number:
		n.Tag, n.Value = "!!float", x.String()
	case []any:
		n.Kind, n.Tag = yaml.SequenceNode, "!!seq"
		for _, e := range x {
			n.Content = append(n.Content, valueNode(e, line, col))
		}
	case map[string]any:
		n.Kind, n.Tag = yaml.MappingNode, "!!map"
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			n.Content = append(n.Content, valueNode(k, line, col), valueNode(x[k], line, col))
		}
	default:
		n.Tag, n.Value = "!!str", fmt.Sprint(x)
	}
	return n
}
