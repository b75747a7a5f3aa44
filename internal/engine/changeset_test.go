package engine

import (
	"testing"

	"knit.dev/knit/internal/runner"
	"knit.dev/knit/internal/store"
)

// TestPlanDiffSaysWhatDiffersFromTheApprovedChange: by resource address
// and action, in words a reviewer reads; the same change says nothing.
func TestPlanDiffSaysWhatDiffersFromTheApprovedChange(t *testing.T) {
	shown := store.ChangeSetComponent{Component: "web", Add: 1, Resources: []store.ChangeSetResource{
		{Address: "local_file.f", Action: "create"}, {Address: "local_file.g", Action: "update"}}}
	plan := func(rs ...runner.ResourceChange) *runner.Plan { return &runner.Plan{Resources: rs} }
	f := runner.ResourceChange{Address: "local_file.f", Action: runner.ActionCreate}
	g := runner.ResourceChange{Address: "local_file.g", Action: runner.ActionUpdate}
	for _, tt := range []struct {
		name string
		plan *runner.Plan
		want string
	}{
		{"same, in another order", plan(g, f), ""},
		{"gained", plan(f, g, runner.ResourceChange{Address: "local_file.extra", Action: runner.ActionCreate}),
			"plan gained local_file.extra (create), which the approved change did not show"},
		{"lost", plan(f), "plan no longer has local_file.g (update), which the approved change showed"},
		{"another action", plan(f, runner.ResourceChange{Address: "local_file.g", Action: runner.ActionReplace}),
			"plan would replace local_file.g, where the approved change showed update"},
		{"a destroy", &runner.Plan{Destroying: true, Resources: []runner.ResourceChange{f, g}},
			"the plan is a destroy: true, the approved change's: false"},
	} {
		if got := planDiff(shown, tt.plan); got != tt.want {
			t.Errorf("%s: %q, want %q", tt.name, got, tt.want)
		}
	}
	counts := store.ChangeSetComponent{Add: 1}
	if got := planDiff(counts, &runner.Plan{Add: 1}); got != "" {
		t.Errorf("same counts without resources: %q", got)
	}
	if got := planDiff(counts, &runner.Plan{Add: 2}); got != "plan has +2 ~0 -0, the approved change showed +1 ~0 -0" {
		t.Errorf("other counts without resources: %q", got)
	}
}

// TestChangeSetChecksumCoversEveryEntry: any change to what a change set
// shows changes its checksum.
func TestChangeSetChecksumCoversEveryEntry(t *testing.T) {
	base := store.ChangeSet{Env: "qa/cs", Revision: 1, Components: []store.ChangeSetComponent{
		{Component: "net", ApprovalID: 1, PlanChecksum: "abc", Resources: []store.ChangeSetResource{{Address: "a", Action: "create"}}},
		{Component: "web", Resources: []store.ChangeSetResource{{Address: "b", Action: "create"}}}}}
	sum := ChangeSetChecksum(base)
	if len(sum) != 64 || ChangeSetChecksum(base) != sum {
		t.Fatalf("checksum %q is not a stable SHA-256", sum)
	}
	for name, edit := range map[string]func(cs *store.ChangeSet){
		"env":          func(cs *store.ChangeSet) { cs.Env = "qa/other" },
		"revision":     func(cs *store.ChangeSet) { cs.Revision = 2 },
		"plan file":    func(cs *store.ChangeSet) { cs.Components[0].PlanChecksum = "abd" },
		"action":       func(cs *store.ChangeSet) { cs.Components[1].Resources[0].Action = "replace" },
		"unknown":      func(cs *store.ChangeSet) { cs.Components[1].KnownAfterApply = "input x" },
		"placeholders": func(cs *store.ChangeSet) { cs.Components[1].Placeholders = []string{"x"} },
	} {
		cs := base
		cs.Components = []store.ChangeSetComponent{base.Components[0], base.Components[1]}
		cs.Components[1].Resources = []store.ChangeSetResource{base.Components[1].Resources[0]}
		edit(&cs)
		if ChangeSetChecksum(cs) == sum {
			t.Errorf("changing the %s leaves the checksum as it was", name)
		}
	}
}
