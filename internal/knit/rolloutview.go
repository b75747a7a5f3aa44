package knit

import (
	"context"
	"errors"
	"fmt"

	"knit.dev/knit/internal/spec"
	"knit.dev/knit/internal/store"
	"knit.dev/knit/internal/view"
)

// RolloutView is where an environment's rollout stands (view.Rollout).
type RolloutView = view.Rollout

// StepEvidence is what one run of a rollout did and found.
type StepEvidence = view.RolloutStepResult

// RolloutPlanStep is one step of a rollout's strategy as people see it.
type RolloutPlanStep = view.RolloutPlanStep

// strategyName is next's strategy, as spec.rollout.strategy spells it.
func strategyName(next *spec.Environment) string {
	switch st := next.Spec.Strategy(); {
	case st == nil:
		return ""
	case st.BlueGreen != nil:
		return "blueGreen"
	}
	return "canary"
}

// planOf is the steps of next's strategy, for people.
func planOf(next *spec.Environment) []RolloutPlanStep {
	var out []RolloutPlanStep
	for _, s := range rolloutSteps(next) {
		p := RolloutPlanStep{Kind: view.StepAnalysis}
		switch {
		case s.SetWeight != nil:
			p.Kind, p.Weight = view.StepSetWeight, *s.SetWeight
		case s.Pause != nil:
			p.Kind, p.Pause = view.StepPause, s.Pause.Duration
		}
		for _, c := range s.Analysis {
			p.Checks = append(p.Checks, c.Name)
		}
		out = append(out, p)
	}
	return out
}

// Mark is a word that changes whenever env's rollout record does ("":
// it has had none), cheap enough for a live page's poll.
func (a *Rollouts) Mark(ctx context.Context, env string) (string, error) {
	rec, err := a.k.store.Rollout(ctx, env)
	if errors.Is(err, store.ErrNotFound) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("%s %s %d", rec.ID, rec.State, rec.Version), nil
}
