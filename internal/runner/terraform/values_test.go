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
	want := []runner.AttributeChange{
		{Name: "name", Before: `"db"`, After: runner.UnknownValue},
		{Name: "password", Before: runner.MaskedValue, After: runner.MaskedValue},
		{Name: "size", Before: "1", After: "2"},
		{Name: "tags", Before: runner.MaskedValue, After: runner.MaskedValue},
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
	wantDerived := []runner.AttributeChange{
		{Name: "input", Before: runner.MaskedValue, After: runner.MaskedValue},
		{Name: "n", Before: `"one"`, After: `"two"`},
		{Name: "note", Before: runner.MaskedValue, After: "null"},
		{Name: "output", Before: runner.MaskedValue, After: runner.UnknownValue},
	}
	if !reflect.DeepEqual(derived, wantDerived) {
		t.Errorf("derived values:\n got %+v\nwant %+v", derived, wantDerived)
	}
	// A wholly sensitive object masks every attribute.
	ch.AfterSensitive = true
	if got := attributeValues(ch, []string{"size"}); got[0].After != runner.MaskedValue || got[0].Before != "1" {
		t.Errorf("wholly sensitive after: %+v", got)
	}
	long := attributeValues(&tfjson.Change{Before: map[string]any{"v": strings.Repeat("x", 500)}, After: map[string]any{}}, []string{"v"})
	if n := len([]rune(long[0].Before)); n != maxValueLen || long[0].After != "null" {
		t.Errorf("a long value is %d runes long: %+v", n, long[0])
	}
}
