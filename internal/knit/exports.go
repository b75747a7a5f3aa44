package knit

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"knit.dev/knit/internal/diag"
	"knit.dev/knit/internal/engine"
	"knit.dev/knit/internal/spec"
)

// ErrNotExported is a read of another environment's output that its
// producer does not export to the reader's team (errors.Is; the error
// names the producer, the output, the team and the fix).
var ErrNotExported = engine.ErrNotExported

// ExportedOutputs returns the outputs producer (TEAM/ENV) exports to
// consumerTeam and holds now, by COMPONENT.OUTPUT: what a valueFrom
// {environment: producer, output: …} of an environment of consumerTeam
// may read, and what an `environments` set generator offers as
// .env.outputs. A sensitive output keeps Sensitive and its value is
// Masked: a generated spec reads it through valueFrom, never inline.
// A producer unknown or never applied exports nothing yet (an empty
// map, no error). The caller must see consumerTeam (ErrForbidden); the
// producer's own team is no matter: the exports are the rule.
func (rs *Records) ExportedOutputs(ctx context.Context, producer, consumerTeam string) (map[string]OutputView, error) {
	if _, _, ok := strings.Cut(producer, "/"); !ok {
		return nil, fmt.Errorf("%w: no environment %q: name the producer TEAM/ENV", ErrNotFound, producer)
	}
	if !visibleTo(ctx, consumerTeam) {
		return nil, fmt.Errorf("%w: the caller does not act for team %s", ErrForbidden, consumerTeam)
	}
	p, err := engine.LoadProducer(ctx, rs.k.store, producer)
	if err != nil {
		return nil, err
	}
	out := map[string]OutputView{}
	for name, v := range p.Exported(consumerTeam) {
		ov := OutputView{Sensitive: v.Sensitive, Value: Masked}
		if !v.Sensitive {
			if err := json.Unmarshal(v.Value, &ov.Value); err != nil {
				return nil, fmt.Errorf("%s %s: stored output is unreadable: %w", producer, name, err)
			}
		}
		out[name] = ov
	}
	return out, nil
}

// CheckEnvReads is what the store says of env's reads of other
// environments' outputs, placed in env's file: a read its producer
// (applied) does not export to env's team is an error, with the fix; one
// whose producer or output is not there yet a warning (the consumer will
// wait, UpstreamEnvironmentNotReady); environments reading each other in
// a cycle an error naming it. knit validate asks it when a store is there.
func (rs *Records) CheckEnvReads(ctx context.Context, env *spec.Environment) (diag.Diagnostics, error) {
	ps, err := engine.CheckEnvReads(ctx, rs.k.store, env)
	if err != nil {
		return nil, err
	}
	return ps.Diagnostics(env), nil
}
