package cli

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"

	"knit.dev/knit/internal/spec"
	"knit.dev/knit/internal/store"
)

// findEnv resolves ENV (team/env, or the metadata name) to a known environment.
func findEnv(ctx context.Context, st store.Store, ref string) (store.Environment, error) {
	if strings.Contains(ref, "/") {
		e, err := st.Environment(ctx, ref)
		if errors.Is(err, store.ErrNotFound) {
			return e, unknownEnv(ctx, st, ref)
		}
		return e, err
	}
	all, err := st.Environments(ctx)
	if err != nil {
		return store.Environment{}, err
	}
	for _, e := range all {
		if e.Metadata == ref {
			return e, nil
		}
	}
	return store.Environment{}, unknownEnv(ctx, st, ref)
}

func unknownEnv(ctx context.Context, st store.Store, ref string) error {
	all, _ := st.Environments(ctx)
	names := make([]string, 0, len(all))
	for _, e := range all {
		names = append(names, e.ID)
	}
	sort.Strings(names)
	if len(names) == 0 {
		return fmt.Errorf("no environment %q: knit has not applied any environment yet (knit apply -f FILE)", ref)
	}
	return fmt.Errorf("no environment %q; known: %s", ref, strings.Join(names, ", "))
}

// envFromStore rebuilds the latest applied spec of an environment.
func envFromStore(ctx context.Context, st store.Store, ref string) (*spec.Environment, error) {
	e, err := findEnv(ctx, st, ref)
	if err != nil {
		return nil, err
	}
	rev, err := st.Revision(ctx, e.ID, 0)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", e.ID, err)
	}
	return spec.FromJSON(rev.Spec, rev.Source)
}

// withStore checks the -o value, opens the store for fn and closes it after.
func (d *deps) withStore(ctx context.Context, output string, fn func(store.Store) error) error {
	if err := checkOutput(output); err != nil {
		return err
	}
	st, _, err := d.openStore(ctx)
	if err != nil {
		return err
	}
	defer st.Close()
	return fn(st)
}

// optionalEnv resolves an optional ENV argument to an environment ID; no
// argument means every environment ("").
func optionalEnv(ctx context.Context, st store.Store, args []string) (string, error) {
	if len(args) == 0 {
		return "", nil
	}
	e, err := findEnv(ctx, st, args[0])
	return e.ID, err
}
