package spec

import "fmt"

// canary checks a canary strategy at p: something marked, its router, and
// its steps.
func (v *validator) canary(p string, c *Canary) {
	v.anyMarked(p, "canary")
	v.router(p+".traffic", c.Traffic.Component, "weightInput", c.Traffic.WeightInput, "the router's variable that takes the canary's share, e.g. weightInput: canary_weight")
	if len(c.Steps) == 0 {
		if !v.undecodable(p + ".steps") {
			v.missing(p, "steps", "e.g. steps: [{setWeight: 10}, {pause: {duration: 1m}}, {setWeight: 50}]")
		}
		return
	}
	last := -1
	for i, s := range c.Steps {
		sp := fmt.Sprintf("%s.steps[%d]", p, i)
		kinds := 0
		for _, set := range []bool{s.SetWeight != nil, s.Pause != nil, s.Analysis != nil} {
			if set {
				kinds++
			}
		}
		switch {
		case kinds == 0 && !v.undecodable(sp):
			v.err(sp, "", "a step needs one of: setWeight, pause, analysis", "e.g. setWeight: 10, pause: {duration: 1m}, or analysis: [{name: errors, prometheus: {...}}]")
		case kinds > 1:
			v.err(sp, "", "set one of setWeight, pause, analysis, not several", "split them into steps of their own")
		}
		if w := s.SetWeight; w != nil {
			switch {
			case *w < 0 || *w > 100:
				v.err(sp+".setWeight", "", fmt.Sprintf("%d is not a share in percent", *w), "a whole number from 0 to 100")
			case *w <= last:
				v.err(sp+".setWeight", "", fmt.Sprintf("weight %d does not rise above the step before's %d", *w, last), "give each setWeight a higher weight than the one before")
			}
			last = *w
		}
		if s.Pause != nil {
			v.duration(sp+".pause.duration", s.Pause.Duration, maxPause)
		}
		if s.Analysis != nil {
			if len(s.Analysis) == 0 {
				v.err(sp+".analysis", "", "an analysis needs at least one check", "e.g. analysis: [{name: errors, prometheus: {url: ..., query: ..., condition: \"result < 0.01\"}}]")
			}
			v.healthChecks(sp+".analysis", s.Analysis, v.markedOwner())
		}
	}
}
