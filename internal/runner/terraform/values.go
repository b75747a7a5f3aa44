package terraform

import (
	"encoding/json"

	tfjson "github.com/hashicorp/terraform-json"

	"knit.dev/knit/internal/runner"
)

// maxValueLen bounds one shown value: a reviewer reads a field, not a blob.
const maxValueLen = 200

// attributeValues gives the old and new value of each named top-level
// attribute of a change. A value marked sensitive on either side (in any
// part) is masked on that side; an after value with any part unknown until
// apply says so. Nothing sensitive leaves the plan file.
func attributeValues(ch *tfjson.Change, names []string) []runner.AttributeChange {
	before, _ := ch.Before.(map[string]any)
	after, _ := ch.After.(map[string]any)
	out := make([]runner.AttributeChange, 0, len(names))
	for _, n := range names {
		v := runner.AttributeChange{Name: n, Before: valueText(before[n]), After: valueText(after[n])}
		if marked(ch.BeforeSensitive, n) {
			v.Before = runner.MaskedValue
		}
		switch {
		case marked(ch.AfterSensitive, n):
			v.After = runner.MaskedValue
		case marked(ch.AfterUnknown, n):
			v.After = runner.UnknownValue
		}
		out = append(out, v)
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
