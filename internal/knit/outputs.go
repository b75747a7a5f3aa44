package knit

import (
	"context"
	"encoding/json"
	"fmt"

	"knit.dev/knit/internal/runner"
	"knit.dev/knit/internal/store"
	"knit.dev/knit/internal/view"
)

// Masked stands for a sensitive value that was not asked for.
const Masked = runner.MaskedValue

// OutputView is view.OutputView: the HTTP client decodes it without linking the library.
type OutputView = view.OutputView

// Outputs returns an environment's outputs by component (one component if
// component is set), sensitive values masked (RevealOutputs shows them).
func (rs *Records) Outputs(ctx context.Context, ref, component string) (map[string]map[string]OutputView, error) {
	k := rs.k
	e, err := k.resolveEnv(ctx, ref)
	if err != nil {
		return nil, err
	}
	return k.outputs(ctx, e, component, false)
}

// outputs is e's outputs, sensitive ones in clear when reveal.
func (k *Knit) outputs(ctx context.Context, e store.Environment, component string, reveal bool) (map[string]map[string]OutputView, error) {
	states, err := k.store.ComponentStates(ctx, e.ID)
	if err != nil {
		return nil, err
	}
	view := map[string]map[string]OutputView{}
	for name, s := range states {
		if component != "" && name != component {
			continue
		}
		m := make(map[string]OutputView, len(s.Outputs))
		for oname, o := range s.Outputs {
			v := OutputView{Sensitive: o.Sensitive, Value: Masked}
			if !o.Sensitive || reveal {
				if err := json.Unmarshal(o.Value, &v.Value); err != nil {
					return nil, fmt.Errorf("%s.%s: stored output is unreadable: %w", name, oname, err)
				}
			}
			m[oname] = v
		}
		view[name] = m
	}
	if component != "" && view[component] == nil {
		return nil, fmt.Errorf("%w: %s has no component %q with outputs", ErrNotFound, e.ID, component)
	}
	return view, nil
}
