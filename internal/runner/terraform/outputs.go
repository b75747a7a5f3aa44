package terraform

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"

	"knit.dev/knit/internal/runner"
)

// Outputs reads the component's outputs from its state with `output -json`.
// Values are decoded with encoding/json into any: numbers are float64, lists
// []any, maps and objects map[string]any. Sensitive outputs are flagged and
// their values returned; the tool's stdout is never logged. A component whose
// work dir was never initialised has no outputs.
func (r *Runner) Outputs(ctx context.Context, c runner.Component) (runner.Outputs, error) {
	dir, err := runDir(c)
	if err != nil {
		return nil, wrap("outputs", c, err)
	}
	if r.opts.States != nil && !exists(filepath.Join(dir, ".terraform")) {
		if err := r.rebuild(ctx, c); err != nil { // shared state: this work dir is a cache
			return nil, wrap("outputs", c, err)
		}
	}
	if !exists(filepath.Join(dir, ".terraform")) {
		return runner.Outputs{}, nil
	}
	s, err := r.markedSession(c, dir, nil)
	if err != nil {
		return nil, wrap("outputs", c, err)
	}
	return r.outputs(ctx, c, s)
}

func (r *Runner) outputs(ctx context.Context, c runner.Component, s *session) (runner.Outputs, error) {
	var meta map[string]struct {
		Sensitive bool            `json:"sensitive"`
		Value     json.RawMessage `json:"value"`
	}
	if err := s.json(ctx, outputArgs(), &meta); err != nil {
		return nil, wrap("outputs", c, err)
	}
	out := make(runner.Outputs, len(meta))
	for k, m := range meta {
		var v any
		if len(m.Value) > 0 {
			if err := json.Unmarshal(m.Value, &v); err != nil {
				return nil, fmt.Errorf("outputs %s: output %q: %w", compName(c), k, err)
			}
		}
		out[k] = runner.Output{Value: v, Sensitive: m.Sensitive}
	}
	return out, nil
}
