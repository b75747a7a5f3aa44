package storetest

import (
	"cmp"
	"fmt"
	"slices"
	"testing"
	"time"

	"knit.dev/knit/internal/store"
)

// testEnvironmentRows: a page of the environments list, in every order and
// filter, holds the environments the single reads would list in that
// order, each with what the single reads say of it (newest run, newest
// drift run and its components' statuses, lock holder, component states
// by status, the applied revision's commit, the pending revision), and
// the count of all the filter selects, even past the last page.
func testEnvironmentRows(t *testing.T, s store.Store, c *clock) {
	ctx := t.Context()
	ids := []string{"a/1", "a/2", "b/1", "b/2", "c/1"}
	for _, id := range ids {
		e := env(id)
		e.Team = id[:1]
		_, err := s.PutRevision(ctx, e, rev(id, at(0)))
		must(t, err)
	}

	// a/1: applied at revision 1 (from a commit), its revision 2 pending;
	// runs r1, d1 (drift), r2 (holding the lock); three component states.
	must(t, s.SetAppliedRevision(ctx, "a/1", 1))
	r2 := rev("a/1-2", at(time.Minute))
	r2.Commit, r2.Author, r2.Message, r2.Errors, r2.File = "c0ffee", "bob", "break it", "env.yaml:3: bad", []byte("file")
	_, err := s.PutRevision(ctx, store.Environment{ID: "a/1"}, r2)
	must(t, err)
	for i, id := range []string{"r1", "d1", "r2"} {
		r := run(id, "a/1", at(time.Duration(i)*time.Hour))
		if id == "d1" {
			r.Kind = "drift"
		}
		must(t, s.CreateRun(ctx, r))
	}
	lockFor(t, s, "a/1", "d1")
	for comp, status := range map[string]string{"web": "drifted", "db": "no changes"} {
		must(t, s.StartComponentRun(ctx, &store.ComponentRun{RunID: "d1", Env: "a/1", Component: comp, Operation: "drift",
			Status: status, StartedAt: at(time.Hour)}))
	}
	must(t, s.ReleaseLock(ctx, "a/1", "d1"))
	lockFor(t, s, "a/1", "r2")
	for comp, status := range map[string]string{"web": "applied", "db": "applied", "job": "failed"} {
		must(t, s.PutComponentState(ctx, store.ComponentState{Env: "a/1", Component: comp, Status: status, Revision: 1, UpdatedAt: at(0)}))
	}

	// Statuses and last changes, with ties that ID order breaks.
	for i, id := range ids {
		c.set(at(time.Duration([]int{3, 1, 4, 1, 5}[i]) * time.Hour))
		must(t, s.SetEnvironmentStatus(ctx, id, []store.EnvStatus{"provisioned", "failed", "provisioned", "failed", "drifted"}[i]))
	}
	c.set(at(0))

	// a/1's row is what the single reads say.
	rows, total, err := s.EnvironmentRows(ctx, store.EnvironmentRowFilter{Filter: store.EnvironmentFilter{Limit: 1}})
	must(t, err)
	equal(t, "total", total, len(ids))
	if len(rows) != 1 {
		t.Fatalf("rows: %+v", rows)
	}
	e, err := s.Environment(ctx, "a/1")
	must(t, err)
	last, err := s.Runs(ctx, "a/1", store.RunFilter{Limit: 1})
	must(t, err)
	drift, err := s.Run(ctx, "d1")
	must(t, err)
	applied, err := s.Revision(ctx, "a/1", 1)
	must(t, err)
	pending, err := s.Revision(ctx, "a/1", 2)
	must(t, err)
	pending.Spec, pending.File = nil, nil
	equal(t, "a/1's row", rows[0], store.EnvironmentRow{Environment: e, LastRun: &last[0], LastDrift: &drift,
		DriftStatuses: map[string]string{"web": "drifted", "db": "no changes"}, LockHolder: "r2",
		Components: map[string]int{"applied": 2, "failed": 1}, AppliedCommit: applied.Commit, Pending: &pending})

	// Every other row: an environment alone, pending at its first revision.
	rows, _, err = s.EnvironmentRows(ctx, store.EnvironmentRowFilter{Filter: store.EnvironmentFilter{After: "c"}})
	must(t, err)
	e, err = s.Environment(ctx, "c/1")
	must(t, err)
	first, err := s.Revision(ctx, "c/1", 1)
	must(t, err)
	first.Spec, first.File = nil, nil
	equal(t, "c/1's row", rows, []store.EnvironmentRow{{Environment: e, Pending: &first}})

	// Pages in every order and filter are the single reads' environments.
	for _, f := range []store.EnvironmentRowFilter{
		{}, {Filter: store.EnvironmentFilter{Limit: 2}}, {Filter: store.EnvironmentFilter{After: "a/2", Limit: 2}},
		{Order: store.ByStatus}, {Order: store.ByStatus, Offset: 2, Filter: store.EnvironmentFilter{Limit: 2}},
		{Order: store.ByUpdated}, {Order: store.ByUpdated, Offset: 1, Filter: store.EnvironmentFilter{Limit: 3}},
		{Order: store.ByUpdated, Filter: store.EnvironmentFilter{Team: "b"}},
		{Order: store.ByStatus, Filter: store.EnvironmentFilter{Status: "failed", Teams: []string{"a", "c"}}},
		{Order: store.ByUpdated, Filter: store.EnvironmentFilter{After: "b/1"}}, // After is for ID order only
		{Order: store.ByUpdated, Offset: 10, Filter: store.EnvironmentFilter{Limit: 2}},
	} {
		rows, total, err := s.EnvironmentRows(ctx, f)
		must(t, err)
		all := f.Filter
		all.After, all.Limit = "", 0
		envs, err := s.Environments(ctx, all)
		must(t, err)
		wantTotal := len(envs)
		slices.SortStableFunc(envs, func(a, b store.Environment) int {
			switch f.Order {
			case store.ByStatus:
				return cmp.Compare(a.Status, b.Status)
			case store.ByUpdated:
				return b.UpdatedAt.Compare(a.UpdatedAt)
			}
			return 0
		})
		if f.Order == store.ByID && f.Filter.After != "" {
			envs = slices.DeleteFunc(envs, func(e store.Environment) bool { return e.ID <= f.Filter.After })
		}
		envs = envs[min(f.Offset, len(envs)):]
		if f.Filter.Limit > 0 {
			envs = envs[:min(f.Filter.Limit, len(envs))]
		}
		var got []string
		for _, r := range rows {
			got = append(got, r.ID)
		}
		equal(t, "page of "+describe(f), got, envIDs(envs))
		equal(t, "total of "+describe(f), total, wantTotal)
	}

	if _, _, err := s.EnvironmentRows(ctx, store.EnvironmentRowFilter{Order: "size"}); err == nil {
		t.Error("an unknown order is not an error")
	}
}

func describe(f store.EnvironmentRowFilter) string { return fmt.Sprintf("%+v", f) }
