package knit

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"sync"

	"knit.dev/knit/internal/engine"
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

// fleetEntry is what Fleet read of one environment at one version: the
// producer (engine.LoadProducer: no spec when it is not live).
type fleetEntry struct {
	version int64
	p       engine.Producer
}

// live reports whether the environment is applied and not torn down.
func (e fleetEntry) live() bool { return e.p.Spec != nil && !e.p.Spec.Spec.Teardown }

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
		if e.live() {
			ids = append(ids, id)
		}
	}
	sort.Strings(ids)
	out := []view.LiveEnvironment{}
	for _, id := range ids {
		p := f.seen[id].p
		if p.Spec.Spec.TeamName != team && !exportsAnything(p.Spec, team) {
			continue
		}
		outs, err := exportedOutputs(p, team)
		if err != nil {
			return nil, err
		}
		out = append(out, view.LiveEnvironment{Team: p.Spec.Spec.TeamName, Name: p.Spec.Spec.EnvName, Labels: p.Spec.Metadata.Labels, Outputs: outs})
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

// read reads environment v at its version, as a producer.
func (f *Fleet) read(ctx context.Context, v store.EnvironmentVersion) (fleetEntry, error) {
	// The version is read first: a write between the two reads re-reads it next time.
	p, err := engine.LoadProducer(ctx, f.k.store, v.ID)
	if err != nil {
		return fleetEntry{}, err
	}
	return fleetEntry{version: v.Version, p: p}, nil
}

// exportsAnything reports whether env exports any output to team.
func exportsAnything(env *spec.Environment, team string) bool {
	for _, x := range env.Spec.Exports {
		if env.Spec.ExportsTo(x.Output, team) {
			return true
		}
	}
	return false
}

// exportedOutputs are the outputs p exports to team and holds, by
// component then name, the sensitive ones left out (they would be written
// in clear into the generated environment's spec).
func exportedOutputs(p engine.Producer, team string) (map[string]map[string]any, error) {
	got := map[string]map[string]any{}
	for name, v := range p.Exported(team) {
		if v.Sensitive {
			continue
		}
		var val any
		if err := json.Unmarshal(v.Value, &val); err != nil {
			return nil, fmt.Errorf("%s %s: stored output is unreadable: %w", p.ID, name, err)
		}
		comp, out, _ := strings.Cut(name, ".")
		if got[comp] == nil {
			got[comp] = map[string]any{}
		}
		got[comp][out] = val
	}
	if len(got) == 0 {
		return nil, nil
	}
	return got, nil
}

// SetInputs are live environments as spec's generators read them.
func SetInputs(live []view.LiveEnvironment) []spec.LiveEnvironment {
	out := make([]spec.LiveEnvironment, len(live))
	for i, l := range live {
		out[i] = spec.LiveEnvironment{Team: l.Team, Name: l.Name, Labels: l.Labels, Outputs: l.Outputs}
	}
	return out
}
