package knit

import (
	"encoding/json"
	"fmt"
	"strings"

	"knit.dev/knit/internal/spec"
)

// cloneEnv is a deep copy of e (through its revision JSON), to derive a
// rollout step's environment from without touching a cached spec.
func cloneEnv(e *spec.Environment) (*spec.Environment, error) {
	body, err := json.Marshal(e)
	if err != nil {
		return nil, fmt.Errorf("copy the spec of %s: %w", e.ID(), err)
	}
	c, err := spec.FromJSON(body, e.File, e.Dir)
	if err != nil {
		return nil, err
	}
	c.Text, c.Root, c.Up = e.Text, e.Root, e.Up
	return c, nil
}

// stableForm is e as it runs while no second instance is up: every
// reference to one (valueFrom: app-canary.url) reads the marked
// component's output instead (app.url). e itself is left as it is.
func stableForm(e *spec.Environment) (*spec.Environment, error) {
	if e.Spec.Strategy() == nil {
		return e, nil
	}
	c, err := cloneEnv(e)
	if err != nil {
		return nil, err
	}
	for _, comp := range c.Spec.Components {
		for i := range comp.Variables {
			comp.Variables[i].ValueFrom = e.StableRef(comp.Variables[i].ValueFrom)
		}
		stableChecks(e, comp.Health)
	}
	if c.Spec.Health != nil {
		stableChecks(e, c.Spec.Health.Checks)
	}
	return c, nil
}

func stableChecks(e *spec.Environment, checks []spec.HealthCheck) {
	for i := range checks {
		if h := checks[i].HTTP; h != nil {
			h.URL.ValueFrom = e.StableRef(h.URL.ValueFrom)
		}
		if p := checks[i].Prometheus; p != nil {
			p.URL.ValueFrom = e.StableRef(p.URL.ValueFrom)
		}
	}
}

// canaryForm is the environment of a canary step: the stable revision's
// components (the next revision's, once promoted: promoted), with each
// component next marks canary beside them as NAME-canary with next's
// definition, the router's weight input at weight, and analysis, when
// set, as the environment's checks. It has no strategy of its own: it is
// one step's, which the rollout carries on.
func canaryForm(stable, next *spec.Environment, promoted bool, weight int, analysis []spec.HealthCheck) (*spec.Environment, error) {
	c := next.Spec.Canary()
	if c == nil {
		return nil, fmt.Errorf("%s has no canary strategy", next.ID())
	}
	return secondForm(stable, next, promoted, spec.CanarySuffix, c.Traffic.Component, c.Traffic.WeightInput, weight, analysis)
}

// secondForm is the environment of a rollout's run: the stable revision's
// components (next's, once promoted), each component next's strategy
// marks beside them as its second instance (NAME+suffix) with next's
// definition, the router's input at value, and checks as the
// environment's checks.
func secondForm(stable, next *spec.Environment, promoted bool, suffix, routerName, input string, value any, checks []spec.HealthCheck) (*spec.Environment, error) {
	base := stable
	if promoted {
		base = next
	}
	env, err := cloneEnv(base)
	if err != nil {
		return nil, err
	}
	copied, err := cloneEnv(next)
	if err != nil {
		return nil, err
	}
	for _, comp := range copied.Spec.Components {
		if copied.Marked(comp) {
			env.Spec.Components = append(env.Spec.Components, secondInstance(comp, suffix))
		}
	}
	for _, comp := range env.Spec.Components {
		comp.Canary, comp.BlueGreen = false, false
		instanceRefs(next, comp)
	}
	router := env.Component(routerName)
	if router == nil {
		return nil, fmt.Errorf("the router %s is no component of %s", routerName, env.ID())
	}
	for i := range router.Variables {
		if router.Variables[i].Name == input {
			router.Variables[i].Value = value
		}
	}
	if len(checks) > 0 {
		if env.Spec.Health == nil {
			env.Spec.Health = &spec.HealthPolicy{}
		}
		env.Spec.Health.Checks = append(env.Spec.Health.Checks, checks...)
	}
	// A step's failure aborts the rollout, which turns it back itself:
	// no rollback of its own follows it.
	env.Spec.Rollout.Strategy, env.Spec.Rollout.OnFailure = nil, spec.NoneOnFailure
	return env, nil
}

// secondInstance turns c (a copy) into its second instance: named
// NAME+suffix (app-canary, app-green), its own health checks reading its
// own outputs, its own Helm release.
func secondInstance(c *spec.Component, suffix string) *spec.Component {
	base := c.Name
	c.Name = base + suffix
	own := func(ref spec.ValueFrom) spec.ValueFrom {
		if rest, ok := strings.CutPrefix(string(ref), base+"."); ok {
			return spec.ValueFrom(c.Name + "." + rest)
		}
		return ref
	}
	for i := range c.Health {
		if h := c.Health[i].HTTP; h != nil {
			h.URL.ValueFrom = own(h.URL.ValueFrom)
		}
		if p := c.Health[i].Prometheus; p != nil {
			p.URL.ValueFrom = own(p.URL.ValueFrom)
		}
	}
	if c.Chart != nil && c.Chart.Release != "" {
		c.Chart.Release += suffix
	}
	return c
}

// instanceRefs has comp take the second instances' outputs where next's
// component of its name does (valueFrom: app-canary.url): the stable
// revision keeps them as the stable form reads them (app.url).
func instanceRefs(next *spec.Environment, comp *spec.Component) {
	nc := next.Component(comp.Name)
	if nc == nil {
		return
	}
	for _, nv := range nc.Variables {
		ref, ok := spec.ParseValueFrom(nv.ValueFrom)
		if !ok {
			continue
		}
		if _, alias := next.InstanceOf(ref.Component); !alias {
			continue
		}
		for i := range comp.Variables {
			if comp.Variables[i].Name == nv.Name {
				comp.Variables[i].ValueFrom = nv.ValueFrom
			}
		}
	}
}
