package engine

import (
	"encoding/json"
	"testing"

	"knit.dev/knit/internal/runner"
	"knit.dev/knit/internal/store"
)

// TestPlannedOutputsFeedInputsOnlyWhilePlanningAhead: while a phase of
// planning ahead lasts, a producer's planned outputs are what its
// consumers read (one its plan changes to a value known only after apply
// is absent); before and after it, its stored outputs are.
func TestPlannedOutputsFeedInputsOnlyWhilePlanningAhead(t *testing.T) {
	s := bare(parseEnv(t, pair), KindPlan, Options{})
	stored, _ := json.Marshal("postgres://old")
	s.states["db"] = store.ComponentState{Status: stateApplied, Outputs: map[string]store.OutputValue{
		"url": {Value: stored}, "id": {Value: stored}}}
	plan := &runner.Plan{OutputChanges: []string{"id", "url"}, PlannedOutputs: runner.Outputs{"url": {Value: "postgres://new"}}}
	s.planned.put("db", plan) // outside a phase: kept nowhere
	if got := string(s.producerState("db").Outputs["url"].Value); got != string(stored) {
		t.Errorf("outside a phase, url is %s", got)
	}
	s.planned.start()
	s.planned.put("db", plan)
	outs := s.producerState("db").Outputs
	if got := string(outs["url"].Value); got != `"postgres://new"` {
		t.Errorf("planned url is %s", got)
	}
	if _, ok := outs["id"]; ok {
		t.Error("an output the plan changes to an unknown value is still known")
	}
	s.planned.stop()
	if got := string(s.producerState("db").Outputs["url"].Value); got != string(stored) {
		t.Errorf("after the phase, url is %s", got)
	}
	if got := string(s.state("db").Outputs["url"].Value); got != string(stored) {
		t.Errorf("the stored state was changed: %s", got)
	}
}
