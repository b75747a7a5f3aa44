package knit

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"

	"knit.dev/knit/internal/engine"
	"knit.dev/knit/internal/runner"
	"knit.dev/knit/internal/spec"
	"knit.dev/knit/internal/store"
	"knit.dev/knit/internal/view"
)

// ErrNotFound is returned when the environment, component or run asked for
// does not exist; the message says what is known instead.
var ErrNotFound = store.ErrNotFound

// Page is one page of a list (view.Page).
type Page[T any] = view.Page[T]

// EnvironmentFilter is view.EnvironmentFilter: the HTTP client decodes it without linking the library.
type EnvironmentFilter = view.EnvironmentFilter

// pageOf is a page of items read with a limit of n+1 (n <= 0: every item
// read, one page): more than n means a next page, whose cursor is that of
// the last item kept.
func pageOf[T any](items []T, n int, cursor func(T) string) Page[T] {
	page := Page[T]{Items: items}
	if n > 0 && len(items) > n {
		page.Items, page.Next = items[:n], cursor(items[n-1])
	}
	if page.Items == nil {
		page.Items = []T{}
	}
	return page
}

func limit(n int) int {
	switch {
	case n <= 0:
		return 50
	case n > 1000:
		return 1000
	}
	return n
}

// EnvironmentSummary is view.EnvironmentSummary: the HTTP client decodes it without linking the library.
type EnvironmentSummary = view.EnvironmentSummary

// storeEnvFilter is the store's filter for f as ctx's caller sees it, at
// most limit environments (<= 0: all).
func storeEnvFilter(ctx context.Context, f EnvironmentFilter, limit int) store.EnvironmentFilter {
	return store.EnvironmentFilter{Team: f.Team, Status: engine.EnvStatusOf(f.Status), Teams: callerTeams(ctx),
		After: f.After, Limit: limit}
}

// EachEnvironment calls fn with the ID of every environment the caller
// sees, a page at a time, until the list or ctx ends: what a controller
// reads at start to learn every schedule.
func (rs *Records) EachEnvironment(ctx context.Context, fn func(id string)) error {
	k := rs.k
	after := ""
	for ctx.Err() == nil {
		page, err := k.Environments(ctx, EnvironmentFilter{After: after, Limit: 1000})
		if err != nil {
			return err
		}
		for _, e := range page.Items {
			fn(e.ID)
		}
		if page.Next == "" {
			return nil
		}
		after = page.Next
	}
	return ctx.Err()
}

// Environments lists the environments ctx's caller may see, in ID order:
// a full page holds f.Limit of them.
func (k *Knit) Environments(ctx context.Context, f EnvironmentFilter) (Page[EnvironmentSummary], error) {
	n := limit(f.Limit)
	envs, err := k.store.EnvironmentSummaries(ctx, storeEnvFilter(ctx, f, n+1))
	if err != nil {
		return Page[EnvironmentSummary]{}, err
	}
	out := make([]EnvironmentSummary, len(envs))
	for i, e := range envs {
		out[i] = summaryRecord(e)
		if i < n || n <= 0 {
			if out[i].Invalid, err = k.InvalidOf(ctx, e.Environment); err != nil {
				return Page[EnvironmentSummary]{}, err
			}
		}
	}
	return pageOf(out, n, func(e EnvironmentSummary) string { return e.ID }), nil
}

// EnvironmentVersions pages through the versions of the environments f
// selects, as Environments would page through them: a view of one read at
// its version is still right while the version is unchanged.
func (rs *Records) EnvironmentVersions(ctx context.Context, f EnvironmentFilter) (Page[view.EnvironmentVersion], error) {
	k := rs.k
	n := limit(f.Limit)
	vs, err := k.store.EnvironmentVersions(ctx, storeEnvFilter(ctx, f, n+1))
	if err != nil {
		return Page[view.EnvironmentVersion]{}, err
	}
	return pageOf(mapAll(vs, versionRecord), n, func(v view.EnvironmentVersion) string { return v.ID }), nil
}

// EnvironmentVersion is the version of the environment team/env (see
// EnvironmentVersions); an unknown one is store.ErrNotFound.
func (rs *Records) EnvironmentVersion(ctx context.Context, id string) (int64, error) {
	k := rs.k
	return k.store.EnvironmentVersion(ctx, id)
}

// ResolveEnv finds a known environment by team/env or metadata name, as
// ctx's caller (WithCaller) sees it: a metadata name that several
// environments share means the one the caller may see, and an environment
// of a team the caller is not limited to is ErrForbidden.
func (rs *Records) ResolveEnv(ctx context.Context, ref string) (view.Environment, error) {
	k := rs.k
	e, err := k.resolveEnv(ctx, ref)
	return envRecord(e), err
}

// resolveEnv is ResolveEnv's store record.
func (k *Knit) resolveEnv(ctx context.Context, ref string) (store.Environment, error) {
	e, err := k.lookupEnv(ctx, ref)
	if err == nil {
		err = mayAct(ctx, ref, e)
	}
	if err != nil {
		return store.Environment{}, err
	}
	return e, nil
}

func (k *Knit) lookupEnv(ctx context.Context, ref string) (store.Environment, error) {
	if team, _, ok := strings.Cut(ref, "/"); ok {
		if !visibleTo(ctx, team) { // whether it exists or not
			return store.Environment{ID: ref, Team: team}, nil
		}
		e, err := k.store.Environment(ctx, ref)
		if errors.Is(err, store.ErrNotFound) {
			return e, k.unknownEnv(ctx, ref)
		}
		return e, err
	}
	all, err := k.store.Environments(ctx, store.EnvironmentFilter{})
	if err != nil {
		return store.Environment{}, err
	}
	var hidden *store.Environment
	for i, e := range all {
		switch {
		case e.Metadata != ref:
		case visibleTo(ctx, e.Team):
			return e, nil
		case hidden == nil:
			hidden = &all[i]
		}
	}
	if hidden != nil {
		return *hidden, nil // refused by the caller's check
	}
	return store.Environment{}, k.unknownEnv(ctx, ref)
}

// maxHint is how many environment IDs an unknown name's error lists.
const maxHint = 20

// unknownEnv is the error for ref, naming the environments ctx's caller
// may see (never those of other teams).
func (k *Knit) unknownEnv(ctx context.Context, ref string) error {
	names, err := k.visibleIDs(ctx, maxHint+1)
	if err != nil {
		return err
	}
	if t, ok := caller(ctx); ok && len(names) == 0 && len(t.Teams) > 0 {
		return fmt.Errorf("%w: no environment %q: teams %s have none yet", ErrNotFound, ref, strings.Join(t.Teams, ", "))
	}
	if len(names) == 0 {
		return fmt.Errorf("%w: no environment %q: knit has not applied any environment yet (knit apply -f FILE)", ErrNotFound, ref)
	}
	more := ""
	if len(names) > maxHint {
		names, more = names[:maxHint], ", …"
	}
	return fmt.Errorf("%w: no environment %q; known: %s%s", ErrNotFound, ref, strings.Join(names, ", "), more)
}

// visibleIDs lists up to n IDs of environments ctx's caller may see.
func (k *Knit) visibleIDs(ctx context.Context, n int) ([]string, error) {
	teams := []string{""} // every team
	if t, ok := caller(ctx); ok && len(t.Teams) > 0 {
		teams = t.Teams
	}
	var ids []string
	for _, team := range teams {
		all, err := k.store.Environments(ctx, store.EnvironmentFilter{Team: team, Limit: n - len(ids)})
		if err != nil {
			return nil, err
		}
		for _, e := range all {
			ids = append(ids, e.ID)
		}
		if len(ids) >= n {
			break
		}
	}
	return ids, nil
}

// AppliedSpec returns the spec an environment is applied at: the revision
// ENV means. A plan of an edited file never moves it.
func (k *Knit) AppliedSpec(ctx context.Context, ref string) (*spec.Environment, view.Environment, error) {
	e, err := k.resolveEnv(ctx, ref)
	if err != nil {
		return nil, view.Environment{}, err
	}
	env, err := k.appliedSpec(ctx, e)
	return env, envRecord(e), err
}

// appliedSpec loads the spec e is applied at. Specs are immutable per
// revision, so a parsed one is kept (a server reads them all the time).
func (k *Knit) appliedSpec(ctx context.Context, e store.Environment) (*spec.Environment, error) {
	if e.AppliedRevision == 0 {
		return nil, fmt.Errorf("%s was never applied: knit apply -f FILE", e.ID)
	}
	key := revKey{e.ID, e.AppliedRevision}
	if env, ok := k.specs.get(key); ok {
		return env, nil
	}
	rev, err := k.store.Revision(ctx, e.ID, e.AppliedRevision)
	if err != nil {
		return nil, fmt.Errorf("%s revision %d: %w", e.ID, e.AppliedRevision, err)
	}
	env, err := spec.FromJSON(rev.Spec, rev.Source, rev.Root)
	if err == nil {
		k.specs.put(key, env)
		k.outlines.put(key, outlineOf(env))
	}
	return env, err
}

// outline is the outline of the spec e is applied at. Outlines are kept
// for more revisions than whole specs, and made whenever a spec is parsed
// (a server parses every applied spec when it starts), so that showing an
// environment seldom parses one.
func (k *Knit) outline(ctx context.Context, e store.Environment) ([]outlineComponent, error) {
	key := revKey{e.ID, e.AppliedRevision}
	if o, ok := k.outlines.get(key); ok {
		return o, nil
	}
	env, err := k.appliedSpec(ctx, e)
	if err != nil {
		return nil, err
	}
	o := outlineOf(env)
	k.outlines.put(key, o)
	return o, nil
}

// ComponentView is view.ComponentView: the HTTP client decodes it without linking the library.
type ComponentView = view.ComponentView

// RunRef is view.RunRef: the HTTP client decodes it without linking the library.
type RunRef = view.RunRef

// EnvironmentView is view.EnvironmentView: the HTTP client decodes it without linking the library.
type EnvironmentView = view.EnvironmentView

// Environment returns one environment with its components, in the applied
// spec's order then removed ones by name.
func (rs *Records) Environment(ctx context.Context, ref string) (EnvironmentView, error) {
	k := rs.k
	id := ref
	if !strings.Contains(ref, "/") { // a metadata name
		e, err := k.resolveEnv(ctx, ref)
		if err != nil {
			return EnvironmentView{}, err
		}
		id = e.ID
	}
	d, err := k.store.EnvironmentDetail(ctx, id)
	if errors.Is(err, store.ErrNotFound) {
		return EnvironmentView{}, k.unknownEnv(ctx, ref)
	} else if err != nil {
		return EnvironmentView{}, err
	}
	v := EnvironmentView{Environment: envRecord(d.Environment), Lock: lockPtr(d.Lock), LastRun: runPtr(d.LastRun), Components: []ComponentView{}}
	if v.Status != engine.EnvApplied && v.Status != engine.EnvTornDown {
		ok, err := k.store.Runs(ctx, id, store.RunFilter{Status: store.StatusSucceeded, Kind: engine.KindApply, Limit: 1})
		if err != nil {
			return v, err
		}
		if len(ok) > 0 {
			v.SucceededRevision = ok[0].Revision
		}
	}
	if v.Invalid, err = k.InvalidOf(ctx, d.Environment); err != nil {
		return v, err
	}
	if x, err := k.store.Expiry(ctx, id); err == nil {
		v.ExpiresAt = x.At
	} else if !errors.Is(err, store.ErrNotFound) {
		return v, err
	}
	if v.Consumers, err = NewConsumers(k).forView(ctx, d.Environment); err != nil {
		return v, err
	}
	byName := make(map[string]*store.ComponentDetail, len(d.Components))
	for i := range d.Components {
		byName[d.Components[i].Name] = &d.Components[i]
	}
	if d.AppliedRevision > 0 {
		outline, err := k.outline(ctx, d.Environment)
		if err != nil {
			return v, err
		}
		for _, c := range outline {
			cv := componentView(c.Name, byName[c.Name])
			cv.Type, cv.DependsOn, cv.DestroyProtection = c.Type, c.DependsOn, c.DestroyProtection
			v.Components = append(v.Components, cv)
			delete(byName, c.Name)
		}
	}
	// What is left and has a state is live but no longer in the file;
	// d.Components is by name, so removed ones are too.
	for i := range d.Components {
		c := &d.Components[i]
		if byName[c.Name] != nil && c.State.Component != "" && c.State.Status != string(engine.Destroyed) {
			cv := componentView(c.Name, c)
			cv.Removed = true
			v.Components = append(v.Components, cv)
		}
	}
	stoppedByRejection(v.Components)
	if d.LastDrift != nil {
		if v.LastDrift, err = k.driftView(ctx, *d.LastDrift); err != nil {
			return v, err
		}
	}
	v.Health, err = k.lastHealth(ctx, id)
	return v, err
}

// componentView shows one component; d is nil for one never run.
func componentView(name string, d *store.ComponentDetail) ComponentView {
	cv := ComponentView{Name: name, Status: string(engine.Pending)}
	if d == nil {
		return cv
	}
	st, cr := d.State, d.LastRun
	cv.Revision, cv.UpdatedAt, cv.Outputs = st.Revision, st.UpdatedAt, d.Outputs
	if st.Status != "" {
		cv.Status = st.Status
	}
	if cr.RunID != "" {
		cv.Code, cv.Reason, cv.Cause = cr.Code, cr.Reason, cr.Cause
		cv.LastRun = &RunRef{RunID: cr.RunID, Operation: cr.Operation, Status: cr.Status, StartedAt: cr.StartedAt, FinishedAt: cr.FinishedAt}
		if len(cr.PlanSummary) > 0 {
			p := &runner.Plan{}
			if json.Unmarshal(cr.PlanSummary, p) == nil {
				p.File = ""
				cv.LastPlan = p
			}
		}
		if cv.Status == string(engine.Rejected) && cr.Status == string(engine.Awaiting) {
			cv.Code, cv.Reason = "rejected: the plan was rejected", "the plan waiting for approval was rejected: nothing was applied; the next apply plans again"
			cv.Cause = engine.ReasonRejected.Cause()
		}
	}
	return cv
}

// stoppedByRejection says, of the components that waited behind a plan a
// person then rejected (in the same run), that they wait for nothing now.
func stoppedByRejection(cs []ComponentView) {
	rejected := map[string][]string{} // run ID → rejected components
	for _, c := range cs {
		if c.Status == string(engine.Rejected) && c.LastRun != nil {
			rejected[c.LastRun.RunID] = append(rejected[c.LastRun.RunID], c.Name)
		}
	}
	for i, c := range cs {
		if c.LastRun == nil || c.LastRun.Status != string(engine.Waiting) || rejected[c.LastRun.RunID] == nil {
			continue
		}
		names := strings.Join(rejected[c.LastRun.RunID], ", ")
		cs[i].Cause = engine.ReasonUpstreamRejected.Cause(rejected[c.LastRun.RunID]...)
		cs[i].Code = "stopped: rejected " + names
		cs[i].Reason = "not run: the plan of " + names + " was rejected; the next apply plans again"
	}
}

// DriftView is view.DriftView: the HTTP client decodes it without linking the library.
type DriftView = view.DriftView

// LastDrift finds the newest drift check of an environment and what it
// found per component; nil if it was never checked.
func (rs *Records) LastDrift(ctx context.Context, env string) (*DriftView, error) {
	k := rs.k
	runs, err := k.store.Runs(ctx, env, store.RunFilter{Kind: store.KindDrift, Limit: 1})
	if err != nil || len(runs) == 0 {
		return nil, err
	}
	return k.driftView(ctx, runs[0])
}

// driftView is what the drift run r found per component.
func (k *Knit) driftView(ctx context.Context, r store.Run) (*DriftView, error) {
	crs, err := k.store.ComponentRuns(ctx, r.ID)
	if err != nil {
		return nil, err
	}
	statuses := make(map[string]string, len(crs))
	for _, cr := range crs {
		statuses[cr.Component] = cr.Status
	}
	return driftOf(r, statuses), nil
}

// driftOf is what the drift run r found, from its component runs'
// statuses by component.
func driftOf(r store.Run, statuses map[string]string) *DriftView {
	d := &DriftView{RunID: r.ID, CheckedAt: r.StartedAt, Status: r.Status, Drifted: []string{}}
	for comp, status := range statuses {
		switch engine.Status(status) {
		case engine.Drifted:
			d.Drifted = append(d.Drifted, comp)
		case engine.Affected:
			d.Affected = append(d.Affected, comp)
		case engine.Failed:
			d.Failed = append(d.Failed, comp)
		case engine.Unknown:
			d.Unknown = append(d.Unknown, comp)
		}
	}
	sort.Strings(d.Drifted)
	sort.Strings(d.Affected)
	sort.Strings(d.Failed)
	sort.Strings(d.Unknown)
	return d
}
