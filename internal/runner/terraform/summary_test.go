package terraform

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	tfjson "github.com/hashicorp/terraform-json"

	"knit.dev/knit/internal/runner"
)

// The fixtures in testdata/plans are `tofu show -json` of real plans made by
// OpenTofu v1.12.6 (paths rewritten to /work/env).
func TestSummarize(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		file        string
		refreshOnly bool
		want        runner.Plan
	}{
		{"create.json", false, runner.Plan{
			Add:           1,
			Resources:     []runner.ResourceChange{{Address: "terraform_data.echo", Action: runner.ActionCreate}},
			OutputChanges: []string{"n", "secret"},
		}},
		{"no_changes.json", false, runner.Plan{}},
		{"update_replace_delete_forget.json", false, runner.Plan{
			Add: 1, Change: 1, Destroy: 2,
			Resources: []runner.ResourceChange{
				{Address: "terraform_data.del", Action: runner.ActionDelete},
				{Address: "terraform_data.fgt", Action: ActionForget},
				{Address: "terraform_data.rep", Action: runner.ActionReplace, Attributes: []string{"id", "triggers_replace"},
					Changes: []runner.ValueChange{
						{Path: "id", Old: `"521ce9ca-5208-0e75-9795-3a8bf906f2bd"`, New: runner.UnknownValue},
						{Path: "triggers_replace", Old: `"one"`, New: `"two"`}}},
				{Address: "terraform_data.upd", Action: runner.ActionUpdate, Attributes: []string{"input", "output"},
					Changes: []runner.ValueChange{
						{Path: "input", Old: `"one"`, New: `"two"`},
						{Path: "output", Old: `"one"`, New: runner.UnknownValue}}},
			},
			OutputChanges: []string{"v"},
		}},
		{"destroy.json", false, runner.Plan{
			Destroy: 4,
			Resources: []runner.ResourceChange{
				{Address: "terraform_data.del", Action: runner.ActionDelete},
				{Address: "terraform_data.fgt", Action: runner.ActionDelete},
				{Address: "terraform_data.rep", Action: runner.ActionDelete},
				{Address: "terraform_data.upd", Action: runner.ActionDelete},
			},
			OutputChanges: []string{"same", "v"},
		}},
		// A normal plan ignores drift it also reports (local_file.f deleted).
		{"read.json", false, runner.Plan{
			Add: 2,
			Resources: []runner.ResourceChange{
				{Address: "data.local_file.r", Action: runner.ActionRead},
				{Address: "local_file.f", Action: runner.ActionCreate},
				{Address: "local_file.g", Action: runner.ActionCreate},
			},
		}},
		{"refresh_only_drift.json", true, runner.Plan{
			Destroy:   1,
			Resources: []runner.ResourceChange{{Address: "local_file.f", Action: runner.ActionDelete}},
		}},
		{"refresh_only_drift.json", false, runner.Plan{}},
	} {
		t.Run(tc.file, func(t *testing.T) {
			data, err := os.ReadFile(filepath.Join("testdata", "plans", tc.file))
			if err != nil {
				t.Fatal(err)
			}
			var p tfjson.Plan
			if err := json.Unmarshal(data, &p); err != nil {
				t.Fatal(err)
			}
			got := summarize(&p, tc.refreshOnly)
			got.PlannedOutputs = nil       // TestPlannedOutputs covers them
			for i := range got.Resources { // TestMaskedValues covers them
				got.Resources[i].Before, got.Resources[i].After, got.Resources[i].AfterUnknown = nil, nil, nil
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("summarize:\n got %+v\nwant %+v", got, tc.want)
			}
		})
	}
}

func TestPlannedOutputs(t *testing.T) {
	t.Parallel()
	data, err := os.ReadFile(filepath.Join("testdata", "plans", "create.json"))
	if err != nil {
		t.Fatal(err)
	}
	var p tfjson.Plan
	if err := json.Unmarshal(data, &p); err != nil {
		t.Fatal(err)
	}
	want := runner.Outputs{"n": {Value: 3.0}, "secret": {Value: "hunter2", Sensitive: true}}
	if got := summarize(&p, false).PlannedOutputs; !reflect.DeepEqual(got, want) {
		t.Errorf("planned outputs of create.json = %+v, want %+v", got, want)
	}
	// An output known only after apply, wholly or in part, is left out.
	var q tfjson.Plan
	if err := json.Unmarshal([]byte(`{
		"format_version": "1.2",
		"planned_values": {"outputs": {
			"id": {"sensitive": false},
			"ids": {"sensitive": false, "value": ["a", null]},
			"name": {"sensitive": false, "value": "web"}}},
		"output_changes": {
			"id": {"actions": ["create"], "after_unknown": true},
			"ids": {"actions": ["create"], "after": ["a", null], "after_unknown": [false, true]},
			"name": {"actions": ["create"], "after": "web", "after_unknown": false}}}`), &q); err != nil {
		t.Fatal(err)
	}
	if got := summarize(&q, false).PlannedOutputs; !reflect.DeepEqual(got, runner.Outputs{"name": {Value: "web"}}) {
		t.Errorf("planned outputs with unknowns = %+v", got)
	}
	// Planned values never reach the plan's JSON (they may be secrets).
	b, _ := json.Marshal(summarize(&p, false))
	if strings.Contains(string(b), "hunter2") {
		t.Errorf("plan JSON carries a planned value: %s", b)
	}
}

func TestChangedAttributes(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		ch   tfjson.Change
		want []string
	}{
		{"scalar", tfjson.Change{Before: map[string]any{"a": 1.0, "b": "x"}, After: map[string]any{"a": 2.0, "b": "x"}}, []string{"a"}},
		{"nested", tfjson.Change{Before: map[string]any{"tags": map[string]any{"k": "v"}}, After: map[string]any{"tags": map[string]any{"k": "w"}}}, []string{"tags"}},
		{"unknown after apply", tfjson.Change{Before: map[string]any{"id": "1"}, After: map[string]any{}, AfterUnknown: map[string]any{"id": true}}, []string{"id"}},
		{"added and removed", tfjson.Change{Before: map[string]any{"old": 1.0}, After: map[string]any{"new": 1.0}}, []string{"new", "old"}},
		{"not objects", tfjson.Change{Before: "a", After: "b"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := changedAttributes(&tc.ch); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("changedAttributes = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestSummarizeNil(t *testing.T) {
	t.Parallel()
	if got := summarize(nil, false); !reflect.DeepEqual(got, runner.Plan{}) {
		t.Errorf("summarize(nil) = %+v", got)
	}
}

// TestMaskedValues: a plan's whole values, for policies, carry no
// sensitive value: each is the mask, at any depth.
func TestMaskedValues(t *testing.T) {
	v := map[string]any{"name": "db", "password": "hunter2", "tags": map[string]any{"k": "v", "token": "t0k"}, "list": []any{"a", "s3cr3t"}}
	marks := map[string]any{"password": true, "tags": map[string]any{"token": true}, "list": []any{false, true}}
	got := masked(v, marks)
	want := map[string]any{"name": "db", "password": runner.MaskedValue, "tags": map[string]any{"k": "v", "token": runner.MaskedValue},
		"list": []any{"a", runner.MaskedValue}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("masked = %v, want %v", got, want)
	}
	if got := masked("whole", true); got != runner.MaskedValue {
		t.Errorf("masked(whole, true) = %v", got)
	}
}
