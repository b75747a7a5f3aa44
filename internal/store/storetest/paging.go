package storetest

import (
	"testing"
	"time"

	"knit.dev/knit/internal/store"
)

// testAppliedRevision: the applied revision is kept apart from the latest
// seen, and revisions list newest first, in pages.
func testAppliedRevision(t *testing.T, s store.Store) {
	ctx := t.Context()
	wantNotFound(t, s.SetAppliedRevision(ctx, "team/web", 1), "applied revision of an unknown environment")
	for i, sp := range []string{"a", "b", "c"} {
		_, err := s.PutRevision(ctx, env("team/web"), rev(sp, at(time.Duration(i)*time.Minute)))
		must(t, err)
	}
	e, err := s.Environment(ctx, "team/web")
	must(t, err)
	if e.Revision != 3 || e.AppliedRevision != 0 {
		t.Errorf("before any apply: latest %d, applied %d; want 3, 0", e.Revision, e.AppliedRevision)
	}
	must(t, s.SetAppliedRevision(ctx, "team/web", 2))
	wantNotFound(t, s.SetAppliedRevision(ctx, "team/web", 9), "applied revision that does not exist")
	e, err = s.Environment(ctx, "team/web")
	must(t, err)
	if e.Revision != 3 || e.AppliedRevision != 2 {
		t.Errorf("latest %d, applied %d; want 3, 2", e.Revision, e.AppliedRevision)
	}
	revs, err := s.Revisions(ctx, "team/web", store.RevisionFilter{Limit: 2})
	must(t, err)
	if len(revs) != 2 || revs[0].Number != 3 || revs[1].Number != 2 || string(revs[0].Spec) != `{"spec":"c"}` {
		t.Errorf("first page of revisions %+v", revs)
	}
	revs, err = s.Revisions(ctx, "team/web", store.RevisionFilter{Before: 2})
	must(t, err)
	if len(revs) != 1 || revs[0].Number != 1 {
		t.Errorf("revisions before 2: %+v", revs)
	}
}

// testPaging: environments, runs and audit events filter and page on a cursor.
func testPaging(t *testing.T, s store.Store) {
	ctx := t.Context()
	for i, id := range []string{"a/1", "a/2", "b/1"} {
		e := env(id)
		e.Team = id[:1]
		_, err := s.PutRevision(ctx, e, rev(id, at(time.Duration(i)*time.Minute)))
		must(t, err)
	}
	must(t, s.SetEnvironmentStatus(ctx, "a/2", "failed"))
	ids := func(envs []store.Environment) (out []string) {
		for _, e := range envs {
			out = append(out, e.ID)
		}
		return out
	}
	all, err := s.Environments(ctx, store.EnvironmentFilter{Limit: 2})
	must(t, err)
	equal(t, "first page", ids(all), []string{"a/1", "a/2"})
	rest, err := s.Environments(ctx, store.EnvironmentFilter{After: "a/2"})
	must(t, err)
	equal(t, "after a/2", ids(rest), []string{"b/1"})
	team, err := s.Environments(ctx, store.EnvironmentFilter{Team: "a", Status: "failed"})
	must(t, err)
	equal(t, "team a, failed", ids(team), []string{"a/2"})

	for i := range 3 {
		r := run(string(rune('p'+i)), "a/1", at(time.Duration(i)*time.Minute))
		r.Source = "api"
		must(t, s.CreateRun(ctx, r))
	}
	runs, err := s.Runs(ctx, "a/1", store.RunFilter{Before: "r", Limit: 5})
	must(t, err)
	if len(runs) != 2 || runs[0].ID != "q" || runs[1].ID != "p" || runs[0].Source != "api" {
		t.Errorf("runs before r: %+v", runs)
	}
	failed := run("s", "a/1", at(time.Hour))
	failed.Status = store.StatusFailed
	must(t, s.CreateRun(ctx, failed))
	onlyFailed, err := s.Runs(ctx, "", store.RunFilter{Status: store.StatusFailed})
	must(t, err)
	if len(onlyFailed) != 1 || onlyFailed[0].ID != "s" {
		t.Errorf("failed runs: %+v", onlyFailed)
	}
	must(t, s.CreateRun(ctx, run("elsewhere", "b/1", at(30*time.Second))))
	every, err := s.Runs(ctx, "", store.RunFilter{})
	must(t, err)
	equal(t, "runs of every environment, newest first", runIDs(every), []string{"s", "r", "q", "elsewhere", "p"})
	var walked []string
	for before := ""; ; {
		page, err := s.Runs(ctx, "", store.RunFilter{Before: before, Limit: 2})
		must(t, err)
		if len(page) == 0 {
			break
		}
		walked = append(walked, runIDs(page)...)
		before = page[len(page)-1].ID
	}
	equal(t, "runs walked two at a time", walked, runIDs(every))
	// Runs started at the same instant: the one created last is newer.
	must(t, s.CreateRun(ctx, run("t1", "c/1", at(2*time.Hour))))
	must(t, s.CreateRun(ctx, run("t2", "c/1", at(2*time.Hour))))
	tied, err := s.Runs(ctx, "c/1", store.RunFilter{Limit: 1})
	must(t, err)
	older, err := s.Runs(ctx, "c/1", store.RunFilter{Before: "t2"})
	must(t, err)
	equal(t, "tied runs", append(runIDs(tied), runIDs(older)...), []string{"t2", "t1"})
	_, err = s.Runs(ctx, "", store.RunFilter{Before: "no-such-run"})
	wantNotFound(t, err, "runs before an unknown run")

	for i, actor := range []string{"alice", "bob", "alice"} {
		must(t, s.AppendAudit(ctx, store.AuditEvent{Env: "a/1", Actor: actor, Action: "apply", Time: at(time.Duration(i) * time.Hour)}))
	}
	alice, err := s.Audit(ctx, store.AuditFilter{Actor: "alice"})
	must(t, err)
	if len(alice) != 2 {
		t.Fatalf("alice's events: %+v", alice)
	}
	after, err := s.Audit(ctx, store.AuditFilter{After: alice[0].ID, Limit: 1})
	must(t, err)
	if len(after) != 1 || after[0].Actor != "bob" {
		t.Errorf("one event after alice's first: %+v", after)
	}
	window, err := s.Audit(ctx, store.AuditFilter{Since: at(time.Hour), Until: at(2 * time.Hour)})
	must(t, err)
	if len(window) != 1 || window[0].Actor != "bob" {
		t.Errorf("events in [1h, 2h): %+v", window)
	}
	must(t, s.AppendAudit(ctx, store.AuditEvent{Env: "b/1", Actor: "alice", Action: "drift", Time: at(3 * time.Hour)}))
	since, err := s.Audit(ctx, store.AuditFilter{Actor: "alice", Since: at(time.Hour)})
	must(t, err)
	if len(since) != 2 || since[0].Env != "a/1" || since[1].Env != "b/1" {
		t.Errorf("alice's events since 1h, oldest first: %+v", since)
	}
	b1, err := s.Audit(ctx, store.AuditFilter{Env: "b/1", Until: at(3 * time.Hour)})
	must(t, err)
	if len(b1) != 0 {
		t.Errorf("b/1's events before 3h (Until is exclusive): %+v", b1)
	}
}

// testPagingEnvironments: environments filter by team and status, alone
// or together, in ID order, and page on the ID after which to go on.
func testPagingEnvironments(t *testing.T, s store.Store) {
	ctx := t.Context()
	for _, e := range []struct {
		id, team string
		status   store.EnvStatus
	}{
		{"b/3", "b", "failed"}, {"a/2", "a", "failed"}, {"a/1", "a", "provisioned"},
		{"b/1", "b", "provisioned"}, {"a/3", "a", "failed"}, {"b/2", "b", "failed"},
	} {
		en := env(e.id)
		en.Team = e.team
		_, err := s.PutRevision(ctx, en, rev(e.id, at(0)))
		must(t, err)
		must(t, s.SetEnvironmentStatus(ctx, e.id, e.status))
	}
	for name, tc := range map[string]struct {
		f    store.EnvironmentFilter
		want []string
	}{
		"all":                   {store.EnvironmentFilter{}, []string{"a/1", "a/2", "a/3", "b/1", "b/2", "b/3"}},
		"team":                  {store.EnvironmentFilter{Team: "b"}, []string{"b/1", "b/2", "b/3"}},
		"status":                {store.EnvironmentFilter{Status: "failed"}, []string{"a/2", "a/3", "b/2", "b/3"}},
		"team and status":       {store.EnvironmentFilter{Team: "a", Status: "failed"}, []string{"a/2", "a/3"}},
		"after, across teams":   {store.EnvironmentFilter{Status: "failed", After: "a/3"}, []string{"b/2", "b/3"}},
		"after a missing ID":    {store.EnvironmentFilter{After: "a/25"}, []string{"a/3", "b/1", "b/2", "b/3"}},
		"limit":                 {store.EnvironmentFilter{Status: "failed", Limit: 3}, []string{"a/2", "a/3", "b/2"}},
		"after and limit":       {store.EnvironmentFilter{Team: "a", After: "a/1", Limit: 1}, []string{"a/2"}},
		"unknown team":          {store.EnvironmentFilter{Team: "c"}, nil},
		"after the last":        {store.EnvironmentFilter{After: "b/3"}, nil},
		"negative limit is all": {store.EnvironmentFilter{Team: "a", Limit: -1}, []string{"a/1", "a/2", "a/3"}},
	} {
		envs, err := s.Environments(ctx, tc.f)
		must(t, err)
		var ids []string
		for _, e := range envs {
			ids = append(ids, e.ID)
		}
		equal(t, name, ids, tc.want)
	}
}

// testLatestComponentRuns: the newest component run of each component of
// one environment, by component name, with its machine-readable code and
// without its log.
func testLatestComponentRuns(t *testing.T, s store.Store) {
	ctx := t.Context()
	latest, err := s.LatestComponentRuns(ctx, "team/web")
	must(t, err)
	if len(latest) != 0 {
		t.Errorf("latest component runs of a new environment: %+v", latest)
	}
	for i, id := range []string{"r1", "r2"} {
		must(t, s.CreateRun(ctx, run(id, "team/web", at(time.Duration(i)*time.Hour))))
		lockFor(t, s, "team/web", id)
		for _, c := range []string{"web", "db", "app"} {
			if id == "r2" && c == "db" {
				continue
			}
			cr := &store.ComponentRun{RunID: id, Env: "team/web", Component: c, Operation: "apply", Status: "waiting",
				Code: "waiting: upstream db awaiting approval", Log: "log", StartedAt: at(time.Duration(i) * time.Hour)}
			must(t, s.StartComponentRun(ctx, cr))
		}
	}
	must(t, s.CreateRun(ctx, run("other", "team/api", at(2*time.Hour))))
	lockFor(t, s, "team/api", "other")
	must(t, s.StartComponentRun(ctx, &store.ComponentRun{RunID: "other", Env: "team/api", Component: "db", Operation: "apply"}))

	latest, err = s.LatestComponentRuns(ctx, "team/web")
	must(t, err)
	var got []string
	for _, cr := range latest {
		got = append(got, cr.Component+"@"+cr.RunID)
		if cr.Log != "" || cr.Code != "waiting: upstream db awaiting approval" || cr.Env != "team/web" {
			t.Errorf("latest run of %s: log %q, code %q, env %q", cr.Component, cr.Log, cr.Code, cr.Env)
		}
	}
	equal(t, "latest component runs of team/web", got, []string{"app@r2", "db@r1", "web@r2"})
}

// testLastRuns: the newest run of each environment, in one call.
func testLastRuns(t *testing.T, s store.Store) {
	ctx := t.Context()
	for i, r := range []store.Run{run("a1", "a/1", at(0)), run("a2", "a/1", at(time.Minute)), run("b1", "b/1", at(0))} {
		r.Kind = []store.RunKind{store.KindApply, store.KindDrift, store.KindApply}[i]
		must(t, s.CreateRun(ctx, r))
	}
	last, err := s.LastRuns(ctx, []string{"a/1", "b/1", "c/1"})
	must(t, err)
	if len(last) != 2 || last["a/1"].ID != "a2" || last["b/1"].ID != "b1" {
		t.Errorf("last runs %+v", last)
	}
	applies, err := s.Runs(ctx, "a/1", store.RunFilter{Kind: "apply"})
	must(t, err)
	if len(applies) != 1 || applies[0].ID != "a1" {
		t.Errorf("apply runs of a/1: %+v", applies)
	}
}

func testDeleteUnappliedEnvironment(t *testing.T, s store.Store) {
	ctx := t.Context()
	for _, id := range []string{"git/invalid", "team/applied", "team/ran"} {
		_, err := s.PutRevision(ctx, env(id), rev(id, at(0)))
		must(t, err)
	}
	must(t, s.SetAppliedRevision(ctx, "team/applied", 1))
	must(t, s.CreateRun(ctx, store.Run{ID: "r1", Env: "team/ran", Kind: "plan", Status: store.StatusSucceeded, StartedAt: at(0)}))
	for id, want := range map[string]bool{"git/invalid": true, "team/applied": false, "team/ran": false, "team/missing": false} {
		got, err := s.DeleteUnappliedEnvironment(ctx, id)
		must(t, err)
		if got != want {
			t.Errorf("delete %s: removed %v, want %v", id, got, want)
		}
	}
	_, err := s.Environment(ctx, "git/invalid")
	wantNotFound(t, err, "deleted environment")
	revs, err := s.Revisions(ctx, "git/invalid", store.RevisionFilter{})
	must(t, err)
	if len(revs) != 0 {
		t.Errorf("the deleted environment keeps %d revisions", len(revs))
	}
	if _, err := s.Environment(ctx, "team/applied"); err != nil {
		t.Errorf("the applied environment: %v", err)
	}
}
