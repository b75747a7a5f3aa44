package helm

import (
	"fmt"
	"os"
	"strings"

	"sigs.k8s.io/yaml"

	"knit.dev/knit/internal/runner"
	"knit.dev/knit/internal/spec"
)

// values merges the release's values: each values file in order, then
// chart.values, then each variable at its dotted path. Maps merge deeply;
// anything else replaces.
func values(env *spec.Environment, def *spec.Component, in runner.Inputs) (map[string]any, error) {
	out := map[string]any{}
	for _, f := range def.Chart.ValuesFiles {
		p, err := env.LocalPath(f)
		if err != nil {
			return nil, err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return nil, err
		}
		var m map[string]any
		if err := yaml.Unmarshal(b, &m); err != nil {
			return nil, fmt.Errorf("values file %s: %w", f, err)
		}
		spec.MergeValues(out, m)
	}
	if def.Chart.Values != nil {
		spec.MergeValues(out, spec.CopyValues(def.Chart.Values).(map[string]any))
	}
	for _, v := range def.Variables {
		val, ok := in[v.Name]
		if !ok {
			return nil, fmt.Errorf("variable %s has no value", v.Name)
		}
		spec.SetValue(out, strings.Split(v.Name, "."), spec.CopyValues(val))
	}
	return out, nil
}
