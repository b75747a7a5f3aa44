package view

import (
	"fmt"
	"time"
)

// Rollout is where an environment's rollout by its strategy stands, for
// people: its state, step and weight, the run it is at, the strategy's
// steps (Plan, which Step indexes) and what each run found.
type Rollout struct {
	Env      string              `json:"env"`
	ID       string              `json:"id"`
	State    string              `json:"state"`
	Step     int                 `json:"step"`
	Steps    int                 `json:"steps"`
	Weight   int                 `json:"weight"`
	RunID    string              `json:"runId,omitempty"`
	Stable   int                 `json:"stableRevision"`
	Reason   string              `json:"reason,omitempty"`
	Evidence []RolloutStepResult `json:"evidence,omitempty"`
	// Strategy is canary or blueGreen.
	Strategy string            `json:"strategy"`
	Plan     []RolloutPlanStep `json:"plan"`
}

// RolloutStepResult is what one run of a rollout did and found.
type RolloutStepResult struct {
	Step   int    `json:"step"`
	Phase  string `json:"phase"`
	RunID  string `json:"runId"`
	Weight int    `json:"weight"`
	Status string `json:"status"`
	// Verification is the run's health checks' summary (an analysis's
	// query and value among them).
	Verification string    `json:"verification,omitempty"`
	At           time.Time `json:"at"`
}

// RolloutPlanStep is one step of a rollout's strategy: setWeight, pause
// or analysis, and what it does.
type RolloutPlanStep struct {
	Kind   string `json:"kind"`
	Weight int    `json:"weight,omitempty"`
	// Pause is a pause's duration ("" with kind pause: until a person
	// promotes).
	Pause string `json:"pause,omitempty"`
	// Checks name an analysis step's health checks.
	Checks []string `json:"checks,omitempty"`
}

// Step kinds (RolloutPlanStep.Kind).
const (
	StepSetWeight = "setWeight"
	StepPause     = "pause"
	StepAnalysis  = "analysis"
)

// String says what step p does, in a few words.
func (p RolloutPlanStep) String() string {
	switch p.Kind {
	case StepSetWeight:
		return fmt.Sprintf("weight %d", p.Weight)
	case StepPause:
		if p.Pause == "" {
			return "pause until promoted"
		}
		return "pause " + p.Pause
	}
	return fmt.Sprintf("analysis (%d checks)", len(p.Checks))
}

// RolloutAction is what a person's promote, abort or retry of a rollout
// led to: the rollout as it now is, and the run the server queued (empty
// when it waits: a pause).
type RolloutAction struct {
	Rollout Rollout `json:"rollout"`
	RunID   string  `json:"runId,omitempty"`
}
