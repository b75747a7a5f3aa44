package knit

import (
	"context"

	"knit.dev/knit/internal/store"
	"knit.dev/knit/internal/view"
)

// ChangeSets lists an environment's change sets ("" = every environment
// the caller sees), newest first, with a status among statuses (none:
// any), at most n (<= 0: all).
func (rs *Records) ChangeSets(ctx context.Context, ref string, n int, statuses ...string) ([]view.ChangeSet, error) {
	k := rs.k
	f := store.ChangeSetFilter{Statuses: statuses, Teams: callerTeams(ctx), Limit: n}
	if ref != "" {
		e, err := k.resolveEnv(ctx, ref)
		if err != nil {
			return nil, err
		}
		f.Env = e.ID
	}
	sets, err := k.store.ListChangeSets(ctx, f)
	return mapAll(sets, changeSetRecord), err
}
