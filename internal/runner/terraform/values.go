package terraform

import (
	"encoding/json"
	"strings"

	tfjson "github.com/hashicorp/terraform-json"

	"knit.dev/knit/internal/runner"
)

// maxValueLen bounds one shown value: a reviewer reads a field, not a blob.
const maxValueLen = 200

// attributeValues gives the old and new value of each named top-level
// attribute of a change. A value marked sensitive on either side (in any
// part) is masked on that side; an after value with any part unknown until
// apply says so. A value that contains one of the change's sensitive
// values is masked too: an attribute computed from a sensitive one (a
// terraform_data's output from its input) is stored unmarked. Nothing
// sensitive leaves the plan file.
func attributeValues(ch *tfjson.Change, names []string) []runner.ValueChange {
	before, _ := ch.Before.(map[string]any)
	after, _ := ch.After.(map[string]any)
	var secrets []string
	secrets = sensitiveLeaves(before, ch.BeforeSensitive, secrets)
	secrets = sensitiveLeaves(after, ch.AfterSensitive, secrets)
	mask := func(text string) string {
		for _, s := range secrets {
			if strings.Contains(text, s) {
				return runner.MaskedValue
			}
		}
		return text
	}
	out := make([]runner.ValueChange, 0, len(names))
	for _, n := range names {
		v := runner.ValueChange{Path: n, Old: mask(valueText(before[n])), New: mask(valueText(after[n]))}
		if marked(ch.BeforeSensitive, n) {
			v.Old = runner.MaskedValue
		}
		switch {
		case marked(ch.AfterSensitive, n):
			v.New = runner.MaskedValue
		case marked(ch.AfterUnknown, n):
			v.New = runner.UnknownValue
		}
		v.Sensitive = v.Old == runner.MaskedValue || v.New == runner.MaskedValue
		out = append(out, v)
	}
	return out
}

// sensitiveLeaves appends to out the text of every scalar in v that marks
// flags as sensitive (true marks all of v), as it appears in valueText's
// JSON: a string without its quotes, escaped.
func sensitiveLeaves(v, marks any, out []string) []string {
	if m, ok := marks.(bool); ok {
		if !m {
			return out
		}
		switch x := v.(type) {
		case map[string]any:
			for _, e := range x {
				out = sensitiveLeaves(e, true, out)
			}
		case []any:
			for _, e := range x {
				out = sensitiveLeaves(e, true, out)
			}
		case nil:
		default:
			if t := strings.Trim(valueText(x), `"`); t != "" {
				out = append(out, t)
			}
		}
		return out
	}
	switch m := marks.(type) {
	case map[string]any:
		x, _ := v.(map[string]any)
		for k, mk := range m {
			out = sensitiveLeaves(x[k], mk, out)
		}
	case []any:
		x, _ := v.([]any)
		for i, mk := range m {
			if i < len(x) {
				out = sensitiveLeaves(x[i], mk, out)
			}
		}
	}
	return out
}

// marked reports whether attribute n, or any part of it, is true in the
// tool's marks (before_sensitive, after_sensitive, after_unknown): true
// for the whole object marks every attribute.
func marked(marks any, n string) bool {
	switch m := marks.(type) {
	case bool:
		return m
	case map[string]any:
		return anyTrue(m[n])
	}
	return false
}

func anyTrue(v any) bool {
	switch m := v.(type) {
	case bool:
		return m
	case map[string]any:
		for _, x := range m {
			if anyTrue(x) {
				return true
			}
		}
	case []any:
		for _, x := range m {
			if anyTrue(x) {
				return true
			}
		}
	}
	return false
}

// valueText is a value as compact JSON, shortened to maxValueLen.
func valueText(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return "?"
	}
	s := string(b)
	if r := []rune(s); len(r) > maxValueLen {
		s = string(r[:maxValueLen-1]) + "…"
	}
	return s
}

// masked is v with every value marks flags as sensitive (true marks all
// of it) replaced by runner.MaskedValue, for a plan's whole values.
func masked(v, marks any) any {
	switch m := marks.(type) {
	case bool:
		if m && v != nil {
			return runner.MaskedValue
		}
		return v
	case map[string]any:
		obj, ok := v.(map[string]any)
		if !ok {
			return v
		}
		out := make(map[string]any, len(obj))
		for k, x := range obj {
			out[k] = masked(x, m[k])
		}
		return out
	case []any:
		list, ok := v.([]any)
		if !ok {
			return v
		}
		out := make([]any, len(list))
		for i, x := range list {
			var mi any
			if i < len(m) {
				mi = m[i]
			}
			out[i] = masked(x, mi)
		}
		return out
	}
	return v
}
