package cli

import (
	"context"
	"fmt"

	"knit.dev/knit/internal/knit"
	"knit.dev/knit/internal/spec"
)

// liveSource reads the live environments a set of team generates from.
type liveSource func(ctx context.Context, team string) ([]spec.LiveEnvironment, error)

// liveEnvironments reads them from the store the global flags point at:
// the local data dir, or the server of --server.
func (d *deps) liveEnvironments(ctx context.Context, team string) ([]spec.LiveEnvironment, error) {
	b, err := d.backend(ctx)
	if err != nil {
		return nil, err
	}
	defer b.Close()
	live, err := b.LiveEnvironments(ctx, team)
	if err != nil {
		return nil, fmt.Errorf("read the live environments of the set's environments generator: %w", err)
	}
	return knit.SetInputs(live), nil
}

// setInputs is what set's generators read: branches, and, when it has an
// environments generator, the live environments live reads (only then
// is a store opened: a set of lists validates anywhere).
func setInputs(ctx context.Context, set *spec.Set, branches []string, live liveSource) (spec.SetInputs, error) {
	in := spec.SetInputs{Branches: branches}
	if _, ok := set.EnvironmentGenerator(); !ok {
		return in, nil
	}
	envs, err := live(ctx, set.TeamName)
	in.Environments = envs
	return in, err
}
