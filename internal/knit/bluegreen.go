package knit

import (
	"fmt"
	"strings"

	"knit.dev/knit/internal/spec"
)

// A blue/green rollout runs on the rollout's phases. The marked component
// itself is blue: it serves while no rollout runs. Green is its second
// instance, NAME-green, with the new revision's definition.
//
//	up       green comes up beside blue, the switch stays on blue, and
//	         previewChecks check green at its preview address before any
//	         live request reaches it
//	step 0   the switch flips to green (weight 100), postSwitchChecks
//	step 1   scaleDownDelay (none: until knit rollout promote)
//	promote  blue takes the new revision (its old instance destroyed)
//	         while green serves, and the switch returns to it: one run,
//	         as the router applies after the component it reads
//	finish   green destroyed
//	abort    the switch back on blue; aborted: green destroyed, the
//	         stable revision
const (
	colorBlue  = "blue"
	colorGreen = "green"
	// switchedWeight is a blue/green rollout's weight while green serves.
	switchedWeight = 100
)

// rolloutSteps are the steps next's strategy runs: a canary's own, or a
// blue/green's as the rollout runs them (blueGreenSteps).
func rolloutSteps(next *spec.Environment) []spec.CanaryStep {
	st := next.Spec.Strategy()
	switch {
	case st == nil:
		return nil
	case st.BlueGreen != nil:
		return blueGreenSteps(st.BlueGreen)
	case st.Canary != nil:
		return st.Canary.Steps
	}
	return nil
}

// blueGreenSteps are a blue/green strategy's steps: the flip, with
// postSwitchChecks as its analysis, then the scale-down delay as a pause
// (without a delay: until a person promotes).
func blueGreenSteps(b *spec.BlueGreen) []spec.CanaryStep {
	w := switchedWeight
	return []spec.CanaryStep{
		{SetWeight: &w, Analysis: b.PostSwitchChecks},
		{Pause: &spec.Pause{Duration: b.ScaleDownDelay}},
	}
}

// blueGreenRun is the environment of a blue/green rollout's run of phase
// (see above) and the weight it runs at (100: green serves).
func blueGreenRun(phase string, stable, next *spec.Environment) (*spec.Environment, int, error) {
	b := next.Spec.Strategy().BlueGreen
	var env *spec.Environment
	var err error
	weight := 0
	switch phase {
	case PhaseUp:
		env, err = colorForm(stable, next, false, colorBlue, b.PreviewChecks)
	case PhaseStep:
		weight = switchedWeight
		env, err = colorForm(stable, next, false, colorGreen, b.PostSwitchChecks)
	case PhasePromote:
		env, err = colorForm(stable, next, true, colorBlue, nil)
	case PhaseAbort:
		env, err = colorForm(stable, next, false, colorBlue, nil)
	case PhaseFinish:
		env, err = stableForm(next)
	case PhaseAborted:
		env, err = stableForm(stable)
	default:
		err = fmt.Errorf("a blue/green rollout has no phase %q", phase)
	}
	return env, weight, err
}

// colorForm is the environment of a blue/green run: the stable revision's
// components (next's, once promoted), each component next marks beside
// them as NAME-green with next's definition, the router's switch at
// active, and checks as the environment's. A reference to NAME-blue reads
// NAME: blue is the marked component itself.
func colorForm(stable, next *spec.Environment, promoted bool, active string, checks []spec.HealthCheck) (*spec.Environment, error) {
	b := next.Spec.Strategy().BlueGreen
	env, err := secondForm(stable, next, promoted, spec.GreenSuffix, b.Switch.Component, b.Switch.Input, active, checks)
	if err != nil {
		return nil, err
	}
	for _, comp := range env.Spec.Components {
		for i := range comp.Variables {
			comp.Variables[i].ValueFrom = blueIsHome(next, comp.Variables[i].ValueFrom)
		}
	}
	return env, nil
}

// blueIsHome is ref with a reference to a marked component's blue
// instance (app-blue.url) read from the component itself (app.url).
func blueIsHome(next *spec.Environment, ref spec.ValueFrom) spec.ValueFrom {
	r, ok := spec.ParseValueFrom(ref)
	if !ok || !strings.HasSuffix(r.Component, spec.BlueSuffix) {
		return ref
	}
	return next.StableRef(ref)
}

// describeColors says what a run of a blue/green rollout does.
func describeColors(phase string) string {
	switch phase {
	case PhaseUp:
		return "green comes up, checked at its preview address; blue serves"
	case PhaseStep:
		return "the switch flips to green"
	case PhasePromote:
		return "blue takes the new revision, the switch back on blue"
	case PhaseFinish:
		return "the new revision, green destroyed"
	case PhaseAbort:
		return "aborted: the switch back on blue"
	}
	return "aborted: the stable revision, green destroyed"
}
