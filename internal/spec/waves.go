package spec

import (
	"fmt"
	"maps"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"knit.dev/knit/internal/diag"
)

// SetRollout is an EnvironmentSet's spec.rollout: the rollout policy its
// environments get (OnFailure, AutoApprove: as an environment's
// spec.rollout) and, with Waves, how a change of the set's template
// reaches them: wave by wave rather than all at once.
type SetRollout struct {
	OnFailure   string    `json:"onFailure,omitempty"`
	AutoApprove bool      `json:"autoApprove,omitempty"`
	Waves       *SetWaves `json:"waves,omitempty"`
}

// SetWaves are the waves of a set's rollout: Steps in order, each wave
// the environments a step adds, under the WavePolicy's bounds.
type SetWaves struct {
	Steps []WaveStep `json:"steps"`
	WavePolicy
}

// WavePolicy bounds a rollout in waves (a set's spec.rollout.waves):
// MaxParallel environments of a wave applied at once (a number, or a
// percentage of the rollout's environments such as "25%"; empty: the
// whole wave), MaxFailed failures tolerated before the rollout halts, and
// SoakEach, how long a verified wave waits before the next starts.
type WavePolicy struct {
	MaxParallel string `json:"maxParallel,omitempty"`
	MaxFailed   int    `json:"maxFailed,omitempty"`
	SoakEach    string `json:"soakEach,omitempty"`
}

// WaveStep is one step of a rollout: the environments its Selector
// matches, or the first Percent of the rollout's environments (by name,
// rounded up, counting those of earlier waves). Exactly one is set.
type WaveStep struct {
	Selector *Selector `json:"selector,omitempty"`
	Percent  int       `json:"percent,omitempty"`
}

// String says the step as the status does: "upgrade_testing=true" or "25%".
func (s WaveStep) String() string {
	if s.Selector != nil {
		return s.Selector.String()
	}
	return strconv.Itoa(s.Percent) + "%"
}

// Parallel is how many environments of n may be applied at once.
func (p WavePolicy) Parallel(n int) int {
	v := strings.TrimSpace(p.MaxParallel)
	if v == "" {
		return max(n, 1)
	}
	if pct, ok := strings.CutSuffix(v, "%"); ok {
		x, _ := strconv.Atoi(pct)
		return max((n*x+99)/100, 1)
	}
	x, _ := strconv.Atoi(v)
	return max(x, 1)
}

// Soak is SoakEach as a duration (zero when none).
func (p WavePolicy) Soak() time.Duration {
	d, _ := time.ParseDuration(p.SoakEach)
	return d
}

// Waves is the set's rollout in waves (nil: a change reaches every
// environment at once).
func (s *Set) Waves() *SetWaves {
	if s.Rollout == nil {
		return nil
	}
	return s.Rollout.Waves
}

// envRollout is the rollout policy the set gives each environment.
func (s *Set) envRollout() *Rollout {
	if s.Rollout == nil || s.Rollout.OnFailure == "" && !s.Rollout.AutoApprove {
		return nil
	}
	return &Rollout{OnFailure: s.Rollout.OnFailure, AutoApprove: s.Rollout.AutoApprove}
}

// Labels are the element's "labels" field, the generated environment's
// metadata.labels (what wave selectors match).
func (e SetElement) Labels() map[string]string {
	m, ok := e.Vars["labels"].(map[string]any)
	if !ok || len(m) == 0 {
		return nil
	}
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = fmt.Sprint(v)
	}
	return out
}

// setRollout decodes a set's spec.rollout and checks it.
func (d *decoder) setRollout(dst **SetRollout) field {
	return func(v *yaml.Node, path string) {
		r := &SetRollout{}
		d.mapping(v, path, false, map[string]field{
			"onFailure":   d.str(&r.OnFailure),
			"autoApprove": d.boolean(&r.AutoApprove),
			"waves":       d.setWaves(&r.Waves),
		})
		switch r.OnFailure {
		case "", RollbackOnFailure, PauseOnFailure, NoneOnFailure:
		default:
			d.errorf(v, join(path, "onFailure"), "use rollback, pause or none", "unknown onFailure %q", r.OnFailure)
		}
		*dst = r
	}
}

func (d *decoder) setWaves(dst **SetWaves) field {
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
		switch {
		case len(w.Steps) == 0 && !d.bad[join(path, "steps")]:
			d.errorf(v, join(path, "steps"), `list the waves, e.g. steps: [{selector: {matchLabels: {upgrade_testing: "true"}}}, {percent: 25}, {percent: 100}]`,
				"waves need at least one step")
		case len(w.Steps) > 0 && w.Steps[len(w.Steps)-1].Percent != 100:
			d.errorf(v, join(path, "steps"), "end the steps with {percent: 100}", "the last step must reach every environment (percent: 100), or some would never get the change")
		}
		*dst = w
	}
}

// waveStep decodes step n, whose earlier steps are before.
func (d *decoder) waveStep(n *yaml.Node, at string, before []WaveStep) WaveStep {
	var s WaveStep
	set := 0
	d.mapping(n, at, false, map[string]field{
		"selector": func(v *yaml.Node, p string) { set++; s.Selector = &Selector{}; d.selector(s.Selector)(v, p) },
		"percent":  func(v *yaml.Node, p string) { set++; d.integer(&s.Percent)(v, p) },
	})
	switch {
	case set != 1:
		d.errorf(n, at, `write one of selector: {matchLabels: {...}} or percent: N`, "a step is exactly one of selector or percent (found %d)", set)
	case s.Selector == nil && (s.Percent < 1 || s.Percent > 100):
		d.errorf(n, join(at, "percent"), "a whole number from 1 to 100", "percent %d is out of range", s.Percent)
	case s.Selector == nil:
		for _, b := range before {
			if b.Selector == nil && b.Percent >= s.Percent {
				d.errorf(n, join(at, "percent"), "make each percent larger than the one before (they count the environments reached so far)",
					"percent %d does not grow past the earlier step's %d: its wave would be empty", s.Percent, b.Percent)
			}
		}
	}
	return s
}

// wavePolicy are the fields of a WavePolicy, to decode with others.
func (d *decoder) wavePolicy(p *WavePolicy) map[string]field {
	return map[string]field{
		"maxParallel": d.str(&p.MaxParallel),
		"maxFailed":   d.integer(&p.MaxFailed),
		"soakEach":    d.str(&p.SoakEach),
	}
}

func (d *decoder) checkWavePolicy(n *yaml.Node, at string, p WavePolicy) {
	if v := strings.TrimSpace(p.MaxParallel); v != "" {
		num, pct := strings.CutSuffix(v, "%")
		x, err := strconv.Atoi(num)
		if err != nil || x < 1 || pct && x > 100 {
			d.errorf(n, join(at, "maxParallel"), `a whole number of environments (e.g. 2) or a percentage of them (e.g. "25%")`,
				"maxParallel %s is not a positive number or percentage", quote(v))
		}
	}
	if p.MaxFailed < 0 {
		d.errorf(n, join(at, "maxFailed"), "0 halts at the first failure", "maxFailed %d is negative", p.MaxFailed)
	}
	if p.SoakEach != "" {
		if x, err := time.ParseDuration(p.SoakEach); err != nil || x < 0 {
			d.errorf(n, join(at, "soakEach"), "a duration, e.g. 10m", "soakEach %s is not a duration", quote(p.SoakEach))
		}
	}
}

// ElementLabels are the metadata.labels of element e's environment: the
// set's spec.labels executed over it, with the element's own "labels"
// field over them.
func (s *Set) ElementLabels(e SetElement) (map[string]string, diag.Diagnostics) {
	labels, ds := s.labelsOf(e)
	if own := e.Labels(); len(own) > 0 {
		if labels == nil {
			labels = map[string]string{}
		}
		maps.Copy(labels, own)
	}
	return labels, ds
}
