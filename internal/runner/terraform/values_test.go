package terraform

import (
	"reflect"
	"strings"
	"testing"

	tfjson "github.com/hashicorp/terraform-json"

	"knit.dev/knit/internal/runner"
)

// TestAttributeValuesMaskSensitive: a reviewer sees old → new values, but
// never a value the tool marks sensitive, on either side or in any part.
func TestAttributeValuesMaskSensitive(t *testing.T) {
	t.Parallel()
	ch := &tfjson.Change{
		Before:          map[string]any{"size": 1.0, "password": "hunter2", "tags": map[string]any{"a": "x", "key": "old-secret"}, "name": "db"},
		After:           map[string]any{"size": 2.0, "password": "hunter3", "tags": map[string]any{"a": "y", "key": "new-secret"}, "name": "db-2"},
		BeforeSensitive: map[string]any{"password": true, "tags": map[string]any{"key": true}},
		AfterSensitive:  map[string]any{"password": true, "tags": map[string]any{"key": true}},
		AfterUnknown:    map[string]any{"name": true},
	}
	got := attributeValues(ch, []string{"name", "password", "size", "tags"})
	want := []runner.ValueChange{
		{Path: "name", Old: `"db"`, New: runner.UnknownValue},
		{Path: "password", Old: runner.MaskedValue, New: runner.MaskedValue, Sensitive: true},
		{Path: "size", Old: "1", New: "2"},
		{Path: "tags", Old: runner.MaskedValue, New: runner.MaskedValue, Sensitive: true},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("attributeValues:\n got %+v\nwant %+v", got, want)
	}
	// A value computed from a sensitive one is stored unmarked
	// (terraform_data's output): it is masked all the same.
	derived := attributeValues(&tfjson.Change{
		Before:          map[string]any{"input": "hunter2", "output": "hunter2", "note": "pw=hunter2!", "n": "one"},
		After:           map[string]any{"input": "hunter3", "n": "two"},
		BeforeSensitive: map[string]any{"input": true},
		AfterSensitive:  map[string]any{"input": true},
		AfterUnknown:    map[string]any{"output": true},
	}, []string{"input", "n", "note", "output"})
	wantDerived := []runner.ValueChange{
		{Path: "input", Old: runner.MaskedValue, New: runner.MaskedValue, Sensitive: true},
		{Path: "n", Old: `"one"`, New: `"two"`},
		{Path: "note", Old: runner.MaskedValue, New: "null", Sensitive: true},
		{Path: "output", Old: runner.MaskedValue, New: runner.UnknownValue, Sensitive: true},
	}
	if !reflect.DeepEqual(derived, wantDerived) {
		t.Errorf("derived values:\n got %+v\nwant %+v", derived, wantDerived)
	}
	// A wholly sensitive object masks every attribute.
	ch.AfterSensitive = true
	if got := attributeValues(ch, []string{"size"}); got[0].New != runner.MaskedValue || got[0].Old != "1" {
		t.Errorf("wholly sensitive after: %+v", got)
	}
	long := attributeValues(&tfjson.Change{Before: map[string]any{"v": strings.Repeat("x", 500)}, After: map[string]any{}}, []string{"v"})
	if n := len([]rune(long[0].Old)); n != maxValueLen || long[0].New != "null" {
		t.Errorf("a long value is %d runes long: %+v", n, long[0])
	}
}
