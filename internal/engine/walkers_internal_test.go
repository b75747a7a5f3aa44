package engine

import (
	"slices"
	"strings"
	"testing"

	"knit.dev/knit/internal/runner"
	"knit.dev/knit/internal/spec"
	"knit.dev/knit/internal/store"
)

// TestDestroyerRefusesWhatAStayingComponentNeeds: destroying one
// component that a live one takes outputs from is refused; in a teardown,
// destroyProtection keeps a component and everything it depends on.
func TestDestroyerRefusesWhatAStayingComponentNeeds(t *testing.T) {
	env := parseEnv(t, strings.Replace(pair, "    - name: app\n", "    - name: app\n      destroyProtection: true\n", 1))
	s := bare(env, KindApply, Options{})
	s.states["app"] = store.ComponentState{Status: stateApplied}
	got := newDestroyer(s).refusals([]string{"db"}, false)
	if !strings.Contains(got["db"], "live component app depends on it") {
		t.Errorf("destroy db alone: refusals %v", got)
	}
	got = newDestroyer(s).refusals([]string{"db", "app"}, true)
	if !strings.Contains(got["app"], "destroyProtection") || !strings.Contains(got["db"], "app depends on it and is not being destroyed") {
		t.Errorf("teardown: refusals %v", got)
	}
}

// TestDrifterAffectedOnlyByOutputsDriftChanges: a component is affected
// by upstream drift when it takes an output the drifted producer's plan
// changes, or any output of an affected producer.
func TestDrifterAffectedOnlyByOutputsDriftChanges(t *testing.T) {
	s := bare(parseEnv(t, pair), KindDrift, Options{})
	dr := newDrifter(s)
	app := s.env.Component("app")
	db := &ComponentResult{Name: "db", Drift: Drifted, Plan: &runner.Plan{Change: 1, OutputChanges: []string{"port"}}}
	s.result.Components = []*ComponentResult{db}
	if got := dr.affectedBy(app); len(got) != 0 {
		t.Errorf("drift of another output: affected by %v", got)
	}
	db.Plan.OutputChanges = []string{"url"}
	if got := dr.affectedBy(app); !slices.Equal(got, []string{"db.url"}) {
		t.Errorf("drift of db.url: affected by %v", got)
	}
	db.Drift, db.Plan = Affected, nil
	if got := dr.affectedBy(app); !slices.Equal(got, []string{"db.url"}) {
		t.Errorf("db affected itself: affected by %v", got)
	}
}

// TestRemovalsSayWhyADestroyIsPlanned: a component removed from the
// file, one a rollback leaves behind, a teardown (with its cause) and
// destroy: true each say so; a removed component's definition is its
// last revision's.
func TestRemovalsSayWhyADestroyIsPlanned(t *testing.T) {
	env, old := parseEnv(t, pair), parseEnv(t, pair)
	for _, tt := range []struct {
		kind   store.RunKind
		reason string
		name   string
		want   string
	}{
		{KindApply, "", "gone", "removed from file: will be destroyed"},
		{KindRollback, "", "gone", "not in the revision rolled back to: will be destroyed"},
		{KindTeardown, "branch deleted\nby ci", "db", "teardown (branch deleted): will be destroyed"},
		{KindTeardown, "", "db", "teardown: will be destroyed"},
		{KindApply, "", "db", "destroy: true: will be destroyed"},
	} {
		s := bare(env, tt.kind, Options{Reason: tt.reason})
		s.removed.defs = map[string]*spec.Environment{"gone": old}
		if got := s.removed.destroyReason(tt.name); got != tt.want {
			t.Errorf("%s of %s: %q, want %q", tt.kind, tt.name, got, tt.want)
		}
		if s.removed.defEnv("gone") != old || s.removed.defEnv("db") != env || !s.removed.has("gone") || s.removed.has("db") {
			t.Error("defEnv/has do not tell removed components from the file's")
		}
	}
}

// TestPreviewsCopyUnderTheRunsFolder: a preview's copies are under the
// data dir's preview folder, or a sandbox's own; a run that is no preview
// removes nothing.
func TestPreviewsCopyUnderTheRunsFolder(t *testing.T) {
	s := bare(parseEnv(t, pair), KindPlan, Options{})
	s.e.DataDir, s.run.ID = "/data", "run-1"
	if got := s.previews.previewRoot(); got != "/data/preview/run-1" {
		t.Errorf("root %s", got)
	}
	if err := s.previews.removePreviewDirs(); err != nil {
		t.Error(err)
	}
}

// TestPlannerDefersWhatIsKnownOnlyAfterApply: a component whose input
// comes from an output its producer's plan does not know is deferred,
// naming the output, and its tool never plans.
func TestPlannerDefersWhatIsKnownOnlyAfterApply(t *testing.T) {
	e, r := testEngine(t)
	s := began(t, e, parseEnv(t, pair), KindPlan, Options{})
	s.planned.start()
	if err := newPlanner(s).planOne(s.handle.ctx, "app"); err != nil {
		t.Fatal(err)
	}
	cr := s.result.Component("app")
	if cr.Status != Deferred || cr.ReasonCode != string(ReasonKnownAfterApply) || !slices.Equal(cr.Upstream, []string{"db.url"}) {
		t.Errorf("app: %+v", cr)
	}
	if calls := r.Calls("plan"); len(calls) != 0 {
		t.Errorf("plans %+v", calls)
	}
}

// TestApplierLeavesAnUpToDateComponentAlone: converging a component
// applied from the same inputs runs no tool but the fingerprint.
func TestApplierLeavesAnUpToDateComponentAlone(t *testing.T) {
	e, r := testEngine(t)
	env := parseEnv(t, pair)
	if _, err := e.Apply(t.Context(), env, Options{AutoApprove: true}); err != nil {
		t.Fatal(err)
	}
	plans, applies := len(r.Calls("plan")), len(r.Calls("apply"))
	s := began(t, e, env, KindApply, Options{})
	if err := newApplier(s).converge(s.handle.ctx, s.newStep("db", Planning), nil, nil); err != nil {
		t.Fatal(err)
	}
	if cr := s.result.Component("db"); cr.Status != UpToDate {
		t.Errorf("db: %+v", cr)
	}
	if len(r.Calls("plan")) != plans || len(r.Calls("apply")) != applies {
		t.Error("an up-to-date component was planned or applied again")
	}
}
