package knit

import (
	"context"
	"errors"
	"slices"

	"knit.dev/knit/internal/spec"
	"knit.dev/knit/internal/store"
	"knit.dev/knit/internal/view"
)

// The small reads the dashboard's pages and live views are made of. Each
// answers the store's own error: a failed read is never "none". Those
// that take an environment ID (team/env) refuse one of a team ctx's
// caller may not see, without reading it.

// mayRead checks that ctx's caller may see the environment id names.
func mayRead(ctx context.Context, id string) error {
	return mayAct(ctx, id, store.Environment{ID: id, Team: spec.TeamOf(id)})
}

// Teams lists the teams that have environments ctx's caller may see,
// sorted (the store filters by the caller's teams).
func (rs *Records) Teams(ctx context.Context) ([]string, error) {
	k := rs.k
	envs, err := k.store.Environments(ctx, storeEnvFilter(ctx, EnvironmentFilter{}, 0))
	if err != nil {
		return nil, err
	}
	var teams []string
	for _, e := range envs {
		teams = append(teams, e.Team)
	}
	slices.Sort(teams)
	return slices.Compact(teams), nil
}

// LockHolder is the ID of the run holding environment id's lock, "" when
// it is free.
func (rs *Records) LockHolder(ctx context.Context, id string) (string, error) {
	k := rs.k
	if err := mayRead(ctx, id); err != nil {
		return "", err
	}
	l, err := k.store.Lock(ctx, id)
	if errors.Is(err, store.ErrNotFound) {
		return "", nil
	}
	return l.RunID, err
}

// CountRuns counts the runs in status, over every environment ctx's
// caller may see.
func (rs *Records) CountRuns(ctx context.Context, status store.RunStatus) (int, error) {
	k := rs.k
	runs, err := k.store.Runs(ctx, "", store.RunFilter{Status: status, Teams: callerTeams(ctx)})
	return len(runs), err
}

// Revision is revision n of environment id; store.ErrNotFound when it has
// none such.
func (rs *Records) Revision(ctx context.Context, id string, n int) (view.Revision, error) {
	k := rs.k
	if err := mayRead(ctx, id); err != nil {
		return view.Revision{}, err
	}
	r, err := k.store.Revision(ctx, id, n)
	return revisionRecord(r), err
}

// LastRun is the newest run of environment id ("": of any ctx's caller
// may see), nil when none.
func (rs *Records) LastRun(ctx context.Context, id string) (*view.Run, error) {
	k := rs.k
	if id != "" {
		if err := mayRead(ctx, id); err != nil {
			return nil, err
		}
	}
	runs, err := k.store.Runs(ctx, id, store.RunFilter{Limit: 1, Teams: callerTeams(ctx)})
	if err != nil || len(runs) == 0 {
		return nil, err
	}
	return runPtr(&runs[0]), nil
}

// EnvironmentRecord is environment id as the store records it.
func (rs *Records) EnvironmentRecord(ctx context.Context, id string) (view.Environment, error) {
	k := rs.k
	if err := mayRead(ctx, id); err != nil {
		return view.Environment{}, err
	}
	e, err := k.store.Environment(ctx, id)
	return envRecord(e), err
}
