package spec

import (
	"sort"

	"knit.dev/knit/internal/dag"
)

// Graph returns the dependency graph: an edge from each dependsOn target and
// each valueFrom producer to the component that needs it. Names that do not
// exist are left out (validation reports them).
func (e *Environment) Graph() *dag.Graph {
	g := dag.New()
	for _, c := range e.Spec.Components {
		if c.Name != "" {
			g.Add(c.Name)
		}
	}
	for _, c := range e.Spec.Components {
		for _, dep := range e.Dependencies(c) {
			if g.Has(dep) && c.Name != "" && dep != c.Name { // a self-dependency is reported on its own
				g.Connect(dep, c.Name)
			}
		}
	}
	return g
}

// Dependencies returns a component's direct dependencies: dependsOn plus
// every valueFrom producer, deduplicated and sorted.
func (e *Environment) Dependencies(c *Component) []string {
	set := map[string]bool{}
	for _, d := range c.DependsOn {
		set[d] = true
	}
	for _, vr := range c.InputVariables() {
		if ref, ok := ParseValueFrom(vr.ValueFrom); ok {
			if base, ok := e.InstanceOf(ref.Component); ok {
				ref.Component = base.Name // the second instance is not up: its outputs are the stable one's
			}
			set[ref.Component] = true
		}
	}
	out := make([]string, 0, len(set))
	for d := range set {
		out = append(out, d)
	}
	sort.Strings(out)
	return out
}
