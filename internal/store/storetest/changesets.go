package storetest

import (
	"testing"
	"time"

	"knit.dev/knit/internal/store"
)

// changeSet is env's change set over the pending approval a and a
// component planned ahead behind it.
func changeSet(env, sum string, a *store.Approval) *store.ChangeSet {
	return &store.ChangeSet{Env: env, RunID: "run-cs", Revision: 2, Checksum: sum, CreatedAt: at(0),
		Components: []store.ChangeSetComponent{
			{Component: a.Component, ApprovalID: a.ID, PlanChecksum: a.PlanChecksum, Gated: true,
				Resources: []store.ChangeSetResource{{Address: "local_file.f", Action: "create"}}, Add: 1},
			{Component: "app", Gated: true, Resources: []store.ChangeSetResource{{Address: "local_file.f", Action: "create"}}, Add: 1},
		}}
}

// testChangeSets: a new change set makes the earlier open one stale;
// approving it approves its components' approvals in the same write, and
// a change set whose approval is no longer pending is refused whole.
func testChangeSets(t *testing.T, s store.Store) {
	ctx := t.Context()
	db := approval("team/web", "db", at(0))
	must(t, s.CreateApproval(ctx, db))
	first := changeSet("team/web", "sum-1", db)
	must(t, s.CreateChangeSet(ctx, first))
	if first.ID == 0 || first.Status != store.ChangeSetPending {
		t.Fatalf("created change set: ID %d status %q", first.ID, first.Status)
	}
	other := changeSet("team/api", "sum-x", db)
	must(t, s.CreateChangeSet(ctx, other))
	second := changeSet("team/web", "sum-2", db)
	must(t, s.CreateChangeSet(ctx, second))
	list, err := s.ListChangeSets(ctx, store.ChangeSetFilter{Env: "team/web"})
	must(t, err)
	if len(list) != 2 || list[0].ID != second.ID || list[1].Status != store.ChangeSetStale {
		t.Fatalf("change sets of team/web: %+v; want the second first and the first stale", list)
	}
	equal(t, "change set read back", list[0], *second)
	open, err := s.ListChangeSets(ctx, store.ChangeSetFilter{Env: "team/api", Statuses: []string{store.ChangeSetPending}})
	must(t, err)
	if len(open) != 1 {
		t.Fatalf("another environment's change set was touched: %+v", open)
	}

	// The stale one cannot be decided; the open one approves db's plan.
	wantConflict(t, s.DecideChangeSet(ctx, first.ID, store.ChangeSetPending, store.ChangeSetApproved, "ann", "ok", at(time.Minute)),
		"deciding a stale change set", store.ChangeSetStale)
	must(t, s.DecideChangeSet(ctx, second.ID, store.ChangeSetPending, store.ChangeSetApproved, "ann", "ok", at(time.Minute)))
	if st := approvalStatus(t, s, db.ID); st != store.ApprovalApproved {
		t.Fatalf("db's approval is %s after the change set's approval", st)
	}
	// other names db's approval, no longer pending: refused, nothing moves.
	wantConflict(t, s.DecideChangeSet(ctx, other.ID, store.ChangeSetPending, store.ChangeSetRejected, "bob", "", at(time.Minute)),
		"a change set whose approval was decided", "no longer pending")
	open, err = s.ListChangeSets(ctx, store.ChangeSetFilter{Env: "team/api"})
	must(t, err)
	if open[0].Status != store.ChangeSetPending || approvalStatus(t, s, db.ID) != store.ApprovalApproved {
		t.Fatalf("a refused decision changed something: %s, db %s", open[0].Status, approvalStatus(t, s, db.ID))
	}
	must(t, s.DecideChangeSet(ctx, second.ID, store.ChangeSetApproved, store.ChangeSetApplied, "ann", "ok", at(2*time.Minute)))
}

// testSupersedeRuns: runs that ended awaiting approval end superseded by
// the run named; others are left alone.
func testSupersedeRuns(t *testing.T, s store.Store) {
	ctx := t.Context()
	for i, id := range []string{"r1", "r2", "r3"} {
		must(t, s.CreateRun(ctx, run(id, "team/web", at(time.Duration(i)*time.Minute))))
	}
	must(t, s.CreateRun(ctx, run("o1", "team/api", at(0))))
	must(t, s.FinishRun(ctx, "r1", store.StatusAwaiting, "", at(time.Minute)))
	must(t, s.FinishRun(ctx, "r2", store.StatusFailed, "boom", at(2*time.Minute)))
	must(t, s.FinishRun(ctx, "o1", store.StatusAwaiting, "", at(time.Minute)))
	ids, err := s.SupersedeRuns(ctx, "team/web", "r3")
	must(t, err)
	equal(t, "superseded runs", ids, []string{"r1"})
	for id, want := range map[string]store.RunStatus{"r1": store.StatusSuperseded, "r2": store.StatusFailed, "o1": store.StatusAwaiting} {
		r, err := s.Run(ctx, id)
		must(t, err)
		if r.Status != want {
			t.Errorf("run %s is %s, want %s", id, r.Status, want)
		}
		if by := map[bool]string{true: "r3"}[want == store.StatusSuperseded]; r.SupersededBy != by {
			t.Errorf("run %s superseded by %q, want %q", id, r.SupersededBy, by)
		}
	}
}
