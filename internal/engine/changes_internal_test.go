package engine

import (
	"slices"
	"strings"
	"testing"

	"knit.dev/knit/internal/runner"
	"knit.dev/knit/internal/store"
)

// TestChangesCoverOnlyWhatTheApprovedChangeShowed: a fresh plan of a
// component planned ahead goes on when it does what the approved change
// set showed; a held component's (its exact plan was approved), one the
// set does not name or could not show, and one that differs do not.
func TestChangesCoverOnlyWhatTheApprovedChangeShowed(t *testing.T) {
	s := bare(parseEnv(t, pair), KindApply, Options{})
	ch := s.changes
	same := &runner.Plan{Add: 1, Resources: []runner.ResourceChange{{Address: "local_file.f", Action: runner.ActionCreate}}}
	if ok, differs := ch.covered("app", same); ok || differs != "" {
		t.Fatalf("no approved change set: covered %v, %q", ok, differs)
	}
	ch.change = &store.ChangeSet{ID: 3, Components: []store.ChangeSetComponent{
		{Component: "db", ApprovalID: 7, Add: 1},
		{Component: "app", Add: 1, Resources: []store.ChangeSetResource{{Address: "local_file.f", Action: "create"}}},
		{Component: "later", KnownAfterApply: "input url comes from db.url"},
	}}
	for _, tt := range []struct {
		name, component string
		plan            *runner.Plan
		ok              bool
		differs         string
	}{
		{"the same change", "app", same, true, ""},
		{"a held component", "db", same, false, ""},
		{"not in it", "other", same, false, ""},
		{"could not show it", "later", same, false, "could not show the plan of later"},
		{"another change", "app", &runner.Plan{Change: 1, Resources: []runner.ResourceChange{{Address: "local_file.f", Action: runner.ActionUpdate}}},
			false, "the plan of app differs from the approved change set #3"},
	} {
		ok, differs := ch.covered(tt.component, tt.plan)
		if ok != tt.ok || !strings.Contains(differs, tt.differs) || (tt.differs == "" && differs != "") {
			t.Errorf("%s: covered %v, %q; want %v, %q", tt.name, ok, differs, tt.ok, tt.differs)
		}
	}
}

// TestChangesListComponentsInGraphOrder: producers before what takes
// their outputs, whatever the order asked.
func TestChangesListComponentsInGraphOrder(t *testing.T) {
	env := parseEnv(t, pair)
	if got := inGraphOrder(env, []string{"app", "db"}); !slices.Equal(got, []string{"db", "app"}) {
		t.Errorf("order %v, want db before app", got)
	}
}

// TestChangesCloseOnlyAChangeAppliedWhole: an approved change set with a
// component not applied in the run stays approved (closeChange writes
// nothing, so a bare session without a store passes).
func TestChangesCloseOnlyAChangeAppliedWhole(t *testing.T) {
	s := bare(parseEnv(t, pair), KindApply, Options{})
	s.changes.change = &store.ChangeSet{ID: 3, Components: []store.ChangeSetComponent{{Component: "db"}, {Component: "app"}}}
	s.result.Components = []*ComponentResult{{Name: "db", Status: Applied}, {Name: "app", Status: Awaiting}}
	s.changes.closeChange()
	if len(s.errs) != 0 {
		t.Errorf("run errors %v", s.errs)
	}
}
