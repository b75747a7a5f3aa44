package engine

import (
	"bytes"
	"slices"
	"strings"

	"knit.dev/knit/internal/spec"
	"knit.dev/knit/internal/store"
)

// exportedValues are env's exported outputs (COMPONENT.OUTPUT) as states
// hold them, raw: compared, never shown.
func exportedValues(env *spec.Environment, states map[string]store.ComponentState) map[string][]byte {
	out := map[string][]byte{}
	for _, x := range env.Spec.Exports {
		comp, name, _ := strings.Cut(x.Output, ".")
		st := states[comp]
		if v, ok := st.Outputs[name]; ok && st.Status != stateDestroyed {
			out[x.Output] = v.Value
		}
	}
	return out
}

// changedExports are the exported outputs whose value the run changed
// (appeared, changed or went), sorted.
func changedExports(before, after map[string][]byte) []string {
	var out []string
	for k, v := range after {
		if b, ok := before[k]; !ok || !bytes.Equal(b, v) {
			out = append(out, k)
		}
	}
	for k := range before {
		if _, ok := after[k]; !ok {
			out = append(out, k)
		}
	}
	slices.Sort(out)
	return out
}

// exportsChanged fills the result's ExportsChanged at the run's end.
func (s *session) exportsChanged() {
	if s.kind == KindPlan || s.opts.Preview || len(s.env.Spec.Exports) == 0 {
		return
	}
	s.mu.Lock()
	after := exportedValues(s.env, s.states)
	s.mu.Unlock()
	s.result.ExportsChanged = changedExports(s.exportsBefore, after)
}
