package spec

import (
	"fmt"

	"gopkg.in/yaml.v3"
)

// StageFleet makes a pipeline stage a fleet: rather than one environment
// file, a Selector of live environments (of the pipeline's team, by their
// metadata.labels), which a release entering the stage reaches in Waves.
// Each environment gets its own file as the release's commit declares it,
// with the release's promote parameters. A stage names a file or a
// selector, never both; a selector needs waves.
type StageFleet struct {
	Selector *Selector `json:"selector,omitempty"`
	// Waves are the waves of the stage's rollout: Steps, when given, as a
	// set's spec.rollout.waves; without steps, each wave is the next
	// maxParallel environments by ID.
	Waves *SetWaves `json:"waves,omitempty"`
}

// IsFleet reports whether the stage rolls releases across a selector's
// environments rather than applying one file.
func (s Stage) IsFleet() bool { return s.Selector != nil }

// FleetID is the ID of fleet stage stage's rollouts in waves of pipeline
// of team: TEAM/PIPELINE.STAGE (a set's is TEAM/NAME, and a set's name has
// no dot), the name knit fleet status and /api/v1/fleets take.
func FleetID(team, pipeline, stage string) string { return team + "/" + pipeline + "." + stage }

func (d *decoder) stageSelector(dst **Selector) field {
	return func(v *yaml.Node, p string) {
		*dst = &Selector{}
		d.selector(*dst)(v, p)
	}
}

// stageWaves decodes a fleet stage's waves: a set's waves whose steps
// may be left out.
func (d *decoder) stageWaves(dst **SetWaves) field {
	return func(v *yaml.Node, path string) {
		w := &SetWaves{}
		fields := d.wavePolicy(&w.WavePolicy)
		fields["steps"] = func(v *yaml.Node, p string) {
			d.sequence(v, p, func(i int, item *yaml.Node, ip string) {
				w.Steps = append(w.Steps, d.waveStep(item, ip, w.Steps))
			})
		}
		d.mapping(v, path, false, fields)
		d.checkWavePolicy(v, path, w.WavePolicy)
		if len(w.Steps) > 0 && w.Steps[len(w.Steps)-1].Percent != 100 {
			d.errorf(v, join(path, "steps"), "end the steps with {percent: 100}, or leave steps out (waves of maxParallel environments)",
				"the last step must reach every environment (percent: 100), or some would never get the release")
		}
		*dst = w
	}
}

// checkStageFleet reports what is wrong with stage i's file, selector and
// waves together (bad reports one problem at a field).
func checkStageFleet(i int, s Stage, bad func(field, msg, hint string)) {
	at := fmt.Sprintf("spec.stages[%d]", i)
	switch {
	case s.Selector != nil && s.File != "":
		bad(at+".selector", fmt.Sprintf("stage %s names both a file and a selector", s.Name),
			"a stage is one environment (file:) or the environments a selector matches (selector: with waves:): remove one of them")
	case s.Selector != nil && i == 0:
		bad(at+".selector", fmt.Sprintf("the first stage %s cannot be a selector: its file names the release", s.Name),
			"give the first stage a file, and roll the release across the fleet in a later stage")
	case s.Selector != nil && s.Waves == nil:
		bad(at+".waves", fmt.Sprintf("stage %s selects environments but has no waves", s.Name),
			`say how the release reaches them, e.g. waves: {maxParallel: "25%", maxFailed: 1, soakEach: 10m}`)
	case s.Selector == nil && s.Waves != nil:
		bad(at+".waves", fmt.Sprintf("stage %s has waves but no selector: it is one environment", s.Name),
			"add selector: {matchLabels: {...}} in place of file:, or remove waves:")
	}
}
