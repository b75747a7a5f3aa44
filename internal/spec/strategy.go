package spec

import (
	"fmt"
	"strings"
	"time"

	"gopkg.in/yaml.v3"
)

// Strategy is how a change reaches an environment that is already
// applied (spec.rollout.strategy, knit.dev/v1 only): one of Canary and
// BlueGreen. Without one, every change applies at once and is verified
// after, as always; an environment's first apply is always plain.
type Strategy struct {
	Canary    *Canary    `json:"canary,omitempty"`
	BlueGreen *BlueGreen `json:"blueGreen,omitempty"`
}

// Canary brings the components marked canary: true up a second time, as
// NAME-canary with the new revision's inputs, beside the stable ones, and
// moves traffic to them step by step through the router Traffic names.
// At the end the stable instances take the new revision, the weight goes
// back to 0 and the canary instances are destroyed; a failed analysis
// does the same without the new revision.
type Canary struct {
	Traffic CanaryTraffic `json:"traffic"`
	Steps   []CanaryStep  `json:"steps"`
}

// CanaryTraffic names the router: a component of the environment and the
// variable of it that takes the canary's share of the traffic, in percent.
type CanaryTraffic struct {
	Component   string `json:"component"`
	WeightInput string `json:"weightInput"`
}

// CanaryStep is one step of a canary: exactly one of SetWeight (the
// canary's share, 0–100, each higher than the one before), Pause and
// Analysis (health checks, of the kinds components' health takes, whose
// failure aborts the rollout).
type CanaryStep struct {
	SetWeight *int          `json:"setWeight,omitempty"`
	Pause     *Pause        `json:"pause,omitempty"`
	Analysis  []HealthCheck `json:"analysis,omitempty"`
}

// Pause waits Duration (a Go duration), or, when it is empty, until a
// person promotes the rollout (knit rollout promote).
type Pause struct {
	Duration string `json:"duration,omitempty"`
}

// BlueGreen brings the components marked blueGreen: true up in a second
// color beside the serving one, checks it at its preview address
// (PreviewChecks), flips the router's Switch to it, checks again
// (PostSwitchChecks), and destroys the old color ScaleDownDelay later
// (empty: when a person promotes the rollout).
type BlueGreen struct {
	Switch           BlueGreenSwitch `json:"switch"`
	PreviewChecks    []HealthCheck   `json:"previewChecks,omitempty"`
	PostSwitchChecks []HealthCheck   `json:"postSwitchChecks,omitempty"`
	ScaleDownDelay   string          `json:"scaleDownDelay,omitempty"`
}

// BlueGreenSwitch names the router: a component of the environment and
// the variable of it that selects the active color.
type BlueGreenSwitch struct {
	Component string `json:"component"`
	Input     string `json:"input"`
}

// Suffixes of the second instances a strategy brings up.
const (
	CanarySuffix = "-canary"
	BlueSuffix   = "-blue"
	GreenSuffix  = "-green"
)

// maxPause bounds a pause's duration and a blue/green scale-down delay.
const maxPause = 7 * 24 * time.Hour

// Strategy is the environment's rollout strategy (nil: none, today's
// apply-everything-at-once).
func (s *EnvSpec) Strategy() *Strategy {
	if s.Rollout == nil {
		return nil
	}
	return s.Rollout.Strategy
}

// Canary is the environment's canary strategy, nil when it has none.
func (s *EnvSpec) Canary() *Canary {
	if st := s.Strategy(); st != nil {
		return st.Canary
	}
	return nil
}

// InstanceSuffixes are the suffixes of the second instances the
// environment's strategy may bring up of its marked components.
func (e *Environment) InstanceSuffixes() []string {
	switch st := e.Spec.Strategy(); {
	case st == nil:
		return nil
	case st.Canary != nil:
		return []string{CanarySuffix}
	case st.BlueGreen != nil:
		return []string{BlueSuffix, GreenSuffix}
	}
	return nil
}

// Marked reports whether the environment's strategy brings c up a second
// time (canary: true under a canary strategy, blueGreen: true under a
// blue/green one).
func (e *Environment) Marked(c *Component) bool {
	switch st := e.Spec.Strategy(); {
	case st == nil:
		return false
	case st.Canary != nil:
		return c.Canary
	case st.BlueGreen != nil:
		return c.BlueGreen
	}
	return false
}

// InstanceOf is the marked component that name is a second instance of
// (app for app-canary), when name is no component of the environment but
// such an instance: a router may take its outputs (valueFrom:
// app-canary.url), which read the marked component's while the second
// instance is not up.
func (e *Environment) InstanceOf(name string) (*Component, bool) {
	if e.Component(name) != nil {
		return nil, false
	}
	for _, suffix := range e.InstanceSuffixes() {
		base, ok := strings.CutSuffix(name, suffix)
		if c := e.Component(base); ok && c != nil && e.Marked(c) {
			return c, true
		}
	}
	return nil, false
}

func (d *decoder) strategy(dst **Strategy) field {
	return func(v *yaml.Node, path string) {
		st := &Strategy{}
		*dst = st
		d.mapping(v, path, false, map[string]field{
			"canary": func(v *yaml.Node, path string) {
				st.Canary = &Canary{}
				c := st.Canary
				d.mapping(v, path, false, map[string]field{
					"traffic": func(v *yaml.Node, path string) {
						d.mapping(v, path, false, map[string]field{"component": d.str(&c.Traffic.Component), "weightInput": d.str(&c.Traffic.WeightInput)})
					},
					"steps": d.canarySteps(&c.Steps),
				})
			},
			"blueGreen": func(v *yaml.Node, path string) {
				st.BlueGreen = &BlueGreen{}
				b := st.BlueGreen
				d.mapping(v, path, false, map[string]field{
					"switch": func(v *yaml.Node, path string) {
						d.mapping(v, path, false, map[string]field{"component": d.str(&b.Switch.Component), "input": d.str(&b.Switch.Input)})
					},
					"previewChecks":    d.healthChecks(&b.PreviewChecks),
					"postSwitchChecks": d.healthChecks(&b.PostSwitchChecks),
					"scaleDownDelay":   d.str(&b.ScaleDownDelay),
				})
			},
		})
	}
}

func (d *decoder) canarySteps(dst *[]CanaryStep) field {
	return func(v *yaml.Node, path string) {
		d.sequence(v, path, func(_ int, item *yaml.Node, p string) {
			var s CanaryStep
			d.mapping(item, p, false, map[string]field{
				"setWeight": d.optInt(&s.SetWeight),
				"pause": func(v *yaml.Node, path string) {
					s.Pause = &Pause{}
					if n := resolve(v); n != nil && n.Tag == "!!null" {
						return // pause: with nothing: until promoted
					}
					d.mapping(v, path, false, map[string]field{"duration": d.str(&s.Pause.Duration)})
				},
				"analysis": d.healthChecks(&s.Analysis),
			})
			*dst = append(*dst, s)
		})
	}
}

// strategy checks spec.rollout.strategy and the components it marks.
func (v *validator) strategy() {
	st := v.env.Spec.Strategy()
	v.marks(st)
	if st == nil {
		return
	}
	const p = "spec.rollout.strategy"
	switch {
	case st.Canary != nil && st.BlueGreen != nil:
		v.err(p, "", "set canary or blueGreen, not both", "an environment rolls out one way")
	case st.Canary != nil:
		v.canary(p+".canary", st.Canary)
	case st.BlueGreen != nil:
		v.blueGreen(p+".blueGreen", st.BlueGreen)
	case !v.undecodable(p):
		v.err(p, "", "a strategy needs one of: canary, blueGreen", "e.g. canary: {traffic: {component: router, weightInput: canary_weight}, steps: [{setWeight: 10}]}")
	}
}

// marks checks the components marked canary: true or blueGreen: true:
// marked for the environment's strategy, and the names of their second
// instances free.
func (v *validator) marks(st *Strategy) {
	for i, c := range v.env.Spec.Components {
		p := fmt.Sprintf("spec.components[%d]", i)
		for _, m := range []struct {
			field  string
			marked bool
			wanted bool
			kind   string
		}{
			{"canary", c.Canary, st != nil && st.Canary != nil, "canary"},
			{"blueGreen", c.BlueGreen, st != nil && st.BlueGreen != nil, "blueGreen"},
		} {
			if m.marked && !m.wanted {
				v.err(p+"."+m.field, "", fmt.Sprintf("%s: true needs spec.rollout.strategy.%s", m.field, m.kind),
					fmt.Sprintf("add spec.rollout.strategy.%s, or remove %s: true", m.kind, m.field))
			}
		}
		if !v.env.Marked(c) {
			continue
		}
		for _, suffix := range v.env.InstanceSuffixes() {
			if other := c.Name + suffix; v.known(other) {
				v.err(p+".name", "", fmt.Sprintf("the rollout brings %q up a second time as %q, and a component has that name already", c.Name, other),
					fmt.Sprintf("rename component %q, or this one", other))
			}
		}
		if c.DestroyProtection {
			v.err(p+".destroyProtection", "", fmt.Sprintf("the rollout destroys %q's second instance after each rollout, and destroyProtection forbids destroying it", c.Name),
				"remove destroyProtection, or the mark")
		}
	}
}

// router checks the component a strategy routes traffic through, at p,
// and its input, at ip: a component of the environment, not marked
// itself, whose variables declare the input.
func (v *validator) router(p, name, ip, input, hint string) {
	r := v.env.Component(name)
	switch {
	case name == "":
		v.missing(p, "component", "the component that routes the traffic")
		return
	case r == nil:
		v.err(p+".component", "", fmt.Sprintf("component %q does not exist", name), suggest(name, v.componentList()))
		return
	case v.env.Marked(r):
		v.err(p+".component", "", fmt.Sprintf("the router %q is itself marked for a second instance", name), "the router stays one component: remove its mark")
	}
	if input == "" {
		v.missing(p, ip, hint)
		return
	}
	for _, vr := range r.Variables {
		if vr.Name == input {
			if vr.ValueFrom != "" {
				v.err(p+"."+ip, "", fmt.Sprintf("variable %q of %q takes valueFrom: the rollout sets it", input, name), "give it a literal value, the one it has when no rollout runs")
			}
			return
		}
	}
	var names []string
	for _, vr := range r.Variables {
		names = append(names, vr.Name)
	}
	v.err(p+"."+ip, "", fmt.Sprintf("component %q has no variable %q", name, input),
		suggest(input, names)+" declare it in its variables with the value it has when no rollout runs")
}

// markedOwner is the one marked component, the owner of a kubernetes
// check in a strategy's checks (nil when there are none or several).
func (v *validator) markedOwner() *Component {
	var owner *Component
	for _, c := range v.env.Spec.Components {
		if v.env.Marked(c) {
			if owner != nil {
				return nil
			}
			owner = c
		}
	}
	return owner
}

// anyMarked reports a strategy at p that marks no component.
func (v *validator) anyMarked(p, field string) {
	for _, c := range v.env.Spec.Components {
		if v.env.Marked(c) {
			return
		}
	}
	v.err(p, "", "no component is marked "+field+": true", "mark the components the rollout brings up a second time ("+field+": true)")
}

// StableRef is the valueFrom ref as it reads while no second instance is
// up: a marked component's own output for one of its second instance's
// (app.url for app-canary.url); any other ref as it is.
func (e *Environment) StableRef(ref ValueFrom) ValueFrom {
	r, ok := ParseValueFrom(ref)
	if !ok {
		return ref
	}
	if base, ok := e.InstanceOf(r.Component); ok {
		return ValueFrom(base.Name + strings.TrimPrefix(string(ref), r.Component))
	}
	return ref
}
