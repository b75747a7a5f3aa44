package knit

import (
	"context"
	"slices"

	"knit.dev/knit/internal/store"
)

// EnvNode is one environment of the environment-level graph: its status
// and the environments whose outputs its applied revision reads (its
// producers). Hidden is an environment of a team the caller may not see,
// named because an environment it sees reads it or is read by it (as a
// producer's view names its consumers): nothing more of it is given.
type EnvNode struct {
	ID     string
	Team   string
	Status store.EnvStatus
	Reads  []string
	Hidden bool
}

// Graph is the environment-level graph as the caller sees it, by ID:
// every environment it may see that is not torn down, each with the
// producers it reads, and the environments of other teams at the other
// end of one of their edges. It reads every environment's applied spec
// once (cached by revision), so it is one pass, whatever the edges.
func (cs *Consumers) Graph(ctx context.Context) ([]EnvNode, error) {
	all, err := cs.k.store.Environments(ctx, store.EnvironmentFilter{})
	if err != nil {
		return nil, err
	}
	byID := map[string]*EnvNode{}
	var order []string
	for _, e := range all {
		if e.Status == store.EnvTornDown {
			continue
		}
		n := &EnvNode{ID: e.ID, Team: e.Team, Status: e.Status, Hidden: !visibleTo(ctx, e.Team)}
		if e.AppliedRevision != 0 {
			env, err := cs.k.appliedSpec(ctx, e)
			if err != nil {
				return nil, err
			}
			n.Reads = env.Upstreams()
		}
		byID[e.ID] = n
		order = append(order, e.ID)
	}
	shown := map[string]bool{}
	for _, id := range order {
		n := byID[id]
		if !n.Hidden {
			shown[id] = true
		}
		for _, p := range n.Reads {
			if pn, ok := byID[p]; ok && (!n.Hidden || !pn.Hidden) {
				shown[id], shown[p] = true, true
			}
		}
	}
	var out []EnvNode
	for _, id := range order {
		if !shown[id] {
			continue
		}
		n := *byID[id]
		n.Reads = slices.DeleteFunc(slices.Clone(n.Reads), func(p string) bool {
			pn, ok := byID[p]
			return !ok || (n.Hidden && pn.Hidden)
		})
		if n.Hidden {
			n.Status = ""
		}
		out = append(out, n)
	}
	return out, nil
}
