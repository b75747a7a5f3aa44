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
		merge(out, m)
	}
	if def.Chart.Values != nil {
		merge(out, deepCopy(def.Chart.Values).(map[string]any))
	}
	for _, v := range def.Variables {
		val, ok := in[v.Name]
		if !ok {
			return nil, fmt.Errorf("variable %s has no value", v.Name)
		}
		set(out, strings.Split(v.Name, "."), deepCopy(val))
	}
	return out, nil
}

func merge(dst, src map[string]any) {
	for k, v := range src {
		if sm, ok := v.(map[string]any); ok {
			if dm, ok := dst[k].(map[string]any); ok {
				merge(dm, sm)
				continue
			}
		}
		dst[k] = v
	}
}

func set(m map[string]any, path []string, v any) {
	for _, k := range path[:len(path)-1] {
		next, ok := m[k].(map[string]any)
		if !ok {
			next = map[string]any{}
			m[k] = next
		}
		m = next
	}
	m[path[len(path)-1]] = v
}

func deepCopy(v any) any {
	switch x := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = deepCopy(e)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = deepCopy(e)
		}
		return out
	}
	return v
}
