package knit

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"

	"knit.dev/knit/internal/spec"
	"knit.dev/knit/internal/store"
	"knit.dev/knit/internal/view"
)

// Fleet reads the live environments an EnvironmentSet's environments
// generator selects from: applied, not torn down, with their labels and
// the outputs their producers export to the reading team. It keeps what it
// read by each environment's version (store.EnvironmentVersion), so a
// read after the first costs one list of versions plus the environments
// that changed since: a server may call it at every poll over thousands
// of environments. Its methods are safe for concurrent use.
type Fleet struct {
	k    *Knit
	mu   sync.Mutex
	seen map[string]fleetEntry // by environment ID
}

// fleetEntry is what Fleet read of one environment at one version.
type fleetEntry struct {
	version int64
	live    bool
	labels  map[string]string
	spec    *spec.Environment                // the applied spec: what it exports, to whom
	outputs map[string]map[string]OutputView // sensitive ones masked
}

// NewFleet is a Fleet over k's store, empty until its first read.
func NewFleet(k *Knit) *Fleet { return &Fleet{k: k, seen: map[string]fleetEntry{}} }

// Live is every live environment as team reads it, sorted by ID: those of
// team itself and those of other teams that export at least one output to
// team (an environment that exports nothing to a team is not its business,
// and a set of that team never generates an environment from it), each
// with only the outputs exported to team, sensitive ones left out. ctx's
// caller must be allowed to see team (ErrForbidden otherwise). A store
// that cannot be read is an error, never an empty fleet.
func (f *Fleet) Live(ctx context.Context, team string) ([]view.LiveEnvironment, error) {
	if !visibleTo(ctx, team) {
		t, _ := caller(ctx)
		return nil, fmt.Errorf("%w: token %s is limited to teams %s, and a set of team %s reads what is exported to that team",
			ErrForbidden, t.Name, strings.Join(t.Teams, ", "), team)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.refresh(ctx); err != nil {
		return nil, err
	}
	ids := make([]string, 0, len(f.seen))
	for id, e := range f.seen {
		if e.live {
			ids = append(ids, id)
		}
	}
	sort.Strings(ids)
	out := []view.LiveEnvironment{}
	for _, id := range ids {
		e := f.seen[id]
		outs := exportedOutputs(e.spec, e.outputs, team)
		if e.spec.Spec.TeamName != team && len(outs) == 0 && !exportsAnything(e.spec, team) {
			continue
		}
		out = append(out, view.LiveEnvironment{Team: e.spec.Spec.TeamName, Name: e.spec.Spec.EnvName, Labels: e.labels, Outputs: outs})
	}
	return out, nil
}

// refresh re-reads the environments whose version moved since the last
// read, and forgets those the store no longer lists.
func (f *Fleet) refresh(ctx context.Context) error {
	vs, err := f.k.store.EnvironmentVersions(ctx, store.EnvironmentFilter{})
	if err != nil {
		return fmt.Errorf("list the environments: %w", err)
	}
	listed := make(map[string]bool, len(vs))
	for _, v := range vs {
		listed[v.ID] = true
		if prev, ok := f.seen[v.ID]; ok && prev.version == v.Version {
			continue
		}
		e, err := f.read(ctx, v)
		if err != nil {
			return err
		}
		f.seen[v.ID] = e
	}
	for id := range f.seen {
		if !listed[id] {
			delete(f.seen, id)
		}
	}
	return nil
}

// read reads environment v at its version: live when it has an applied
// revision that is not a teardown, and its last run did not tear it down.
func (f *Fleet) read(ctx context.Context, v store.EnvironmentVersion) (fleetEntry, error) {
	k := f.k
	e, err := k.store.Environment(ctx, v.ID)
	if err != nil {
		return fleetEntry{}, fmt.Errorf("read %s: %w", v.ID, err)
	}
	// The version read first: a write between the two reads re-reads it next time.
	entry := fleetEntry{version: v.Version}
	if e.AppliedRevision == 0 || e.Status == store.EnvTornDown {
		return entry, nil
	}
	env, err := k.appliedSpec(ctx, e)
	if err != nil {
		return fleetEntry{}, err
	}
	if env.Spec.Teardown {
		return entry, nil
	}
	outs, err := k.outputs(ctx, e, "", false)
	if err != nil {
		return fleetEntry{}, fmt.Errorf("read the outputs of %s: %w", e.ID, err)
	}
	entry.live, entry.spec, entry.outputs, entry.labels = true, env, outs, env.Metadata.Labels
	return entry, nil
}

// exportedOutputs are the outputs env exports to team, by component, the
// sensitive ones left out (they would be written in clear into the
// generated environment's spec).
func exportedOutputs(env *spec.Environment, outs map[string]map[string]OutputView, team string) map[string]map[string]any {
	got := map[string]map[string]any{}
	for c, os := range outs {
		for name, o := range os {
			if o.Sensitive || !exportsTo(env, c+"."+name, team) {
				continue
			}
			if got[c] == nil {
				got[c] = map[string]any{}
			}
			got[c][name] = o.Value
		}
	}
	if len(got) == 0 {
		return nil
	}
	return got
}

// SetInputs are live environments as spec's generators read them.
func SetInputs(live []view.LiveEnvironment) []spec.LiveEnvironment {
	out := make([]spec.LiveEnvironment, len(live))
	for i, l := range live {
		out[i] = spec.LiveEnvironment{Team: l.Team, Name: l.Name, Labels: l.Labels, Outputs: l.Outputs}
	}
	return out
}
