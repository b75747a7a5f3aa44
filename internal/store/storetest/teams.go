package storetest

import (
	"testing"
	"time"

	"knit.dev/knit/internal/store"
)

// testTeamsFilter: every list a caller pages through keeps only its teams'
// records before the page is cut, so a page of Limit holds Limit of them.
// Teams whose names share a prefix ("a", "ab", "a-x") are told apart.
func testTeamsFilter(t *testing.T, s store.Store) {
	ctx := t.Context()
	ids := []string{"a-x/1", "a/1", "ab/1", "b/1", "a/2", "ab/2", "b/2", "a/3"}
	for i, id := range ids {
		e := env(id)
		e.Team = teamOfID(id)
		_, err := s.PutRevision(ctx, e, rev(id, at(0)))
		must(t, err)
		must(t, s.CreateRun(ctx, run("run-"+id, id, at(time.Duration(i)*time.Minute))))
		must(t, s.CreateApproval(ctx, approval(id, "db", at(time.Duration(i)*time.Second))))
		must(t, s.AppendAudit(ctx, store.AuditEvent{Env: id, Actor: "alice", Action: "apply"}))
	}
	must(t, s.AppendAudit(ctx, store.AuditEvent{Actor: "admin", Action: "token-create"}))
	a := []string{"a"}
	ab := []string{"a", "b"}

	envs, err := s.Environments(ctx, store.EnvironmentFilter{Teams: a, Limit: 2})
	must(t, err)
	equal(t, "a's first two environments", envIDs(envs), []string{"a/1", "a/2"})
	envs, err = s.Environments(ctx, store.EnvironmentFilter{Teams: ab, After: "a/2"})
	must(t, err)
	equal(t, "a's and b's after a/2", envIDs(envs), []string{"a/3", "b/1", "b/2"})
	envs, err = s.Environments(ctx, store.EnvironmentFilter{Teams: a, Team: "b"})
	must(t, err)
	equal(t, "team b asked by a caller of a", envIDs(envs), []string(nil))
	sums, err := s.EnvironmentSummaries(ctx, store.EnvironmentFilter{Teams: []string{"ab"}})
	must(t, err)
	if len(sums) != 2 || sums[0].ID != "ab/1" || sums[1].ID != "ab/2" {
		t.Errorf("ab's summaries: %+v", sums)
	}
	vs, err := s.EnvironmentVersions(ctx, store.EnvironmentFilter{Teams: a, Limit: 5})
	must(t, err)
	if len(vs) != 3 || vs[2].ID != "a/3" {
		t.Errorf("a's versions: %+v", vs)
	}

	runs, err := s.Runs(ctx, "", store.RunFilter{Teams: a, Limit: 2})
	must(t, err)
	equal(t, "a's two newest runs", runIDs(runs), []string{"run-a/3", "run-a/2"})

	as, err := s.ListApprovals(ctx, store.ApprovalFilter{Teams: a})
	must(t, err)
	var envsOf []string
	for _, x := range as {
		envsOf = append(envsOf, x.Env)
	}
	equal(t, "a's approvals", envsOf, []string{"a/1", "a/2", "a/3"})
	as, err = s.ListApprovals(ctx, store.ApprovalFilter{Teams: ab, Limit: 4})
	must(t, err)
	envsOf = nil
	for _, x := range as {
		envsOf = append(envsOf, x.Env)
	}
	equal(t, "a's and b's first four approvals", envsOf, []string{"a/1", "b/1", "a/2", "b/2"})

	for _, id := range []string{"a/1", "ab/1", "a/2"} {
		must(t, s.CreateChangeSet(ctx, changeSet(id, "sum-"+id, approval(id, "db", at(0)))))
	}
	sets, err := s.ListChangeSets(ctx, store.ChangeSetFilter{Teams: a, Limit: 2})
	must(t, err)
	if len(sets) != 2 || sets[0].Env != "a/2" || sets[1].Env != "a/1" {
		t.Errorf("a's change sets, newest first: %+v", sets)
	}

	events, err := s.Audit(ctx, store.AuditFilter{Teams: []string{"b"}})
	must(t, err)
	if len(events) != 2 || events[0].Env != "b/1" || events[1].Env != "b/2" {
		t.Errorf("b's audit events (none without an environment): %+v", events)
	}
}

func teamOfID(id string) string {
	for i := range id {
		if id[i] == '/' {
			return id[:i]
		}
	}
	return id
}

func envIDs(envs []store.Environment) (out []string) {
	for _, e := range envs {
		out = append(out, e.ID)
	}
	return out
}
