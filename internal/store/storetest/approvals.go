package storetest

import (
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"knit.dev/knit/internal/store"
)

// approval is a request for env's component made at created. Its plan has
// bytes that are not UTF-8 so a store that treats plans as text fails.
func approval(env, component string, created time.Time) *store.Approval {
	return &store.Approval{Env: env, Component: component, RunID: "run-" + component, Revision: 2,
		Fingerprint: "fp-" + component, PlanFile: "/data/plans/" + component + ".tfplan", PlanChecksum: "sha256:abc",
		Plan: []byte("{\"add\":1}\x00\xff\xfe\n"), CreatedAt: created}
}

func wantConflict(t *testing.T, err error, what, current string) {
	t.Helper()
	if !errors.Is(err, store.ErrConflict) {
		t.Errorf("%s: err = %v, want store.ErrConflict", what, err)
	} else if !strings.Contains(err.Error(), current) {
		t.Errorf("%s: error %q does not name the current status %s", what, err, current)
	}
}

func approvalStatus(t *testing.T, s store.Store, id int64) string {
	t.Helper()
	a, err := s.Approval(t.Context(), id)
	must(t, err)
	return a.Status
}

func approvalIDs(as []store.Approval) []int64 {
	ids := []int64{}
	for _, a := range as {
		ids = append(ids, a.ID)
	}
	return ids
}

func testCreateApproval(t *testing.T, s store.Store) {
	ctx := t.Context()
	first := approval("team/web", "db", at(0))
	must(t, s.CreateApproval(ctx, first))
	if first.ID == 0 || first.Status != store.ApprovalPending {
		t.Fatalf("created approval has ID %d and status %q, want non-zero and pending", first.ID, first.Status)
	}
	got, err := s.Approval(ctx, first.ID)
	must(t, err)
	equal(t, "approval read back", got, *first)
	_, err = s.Approval(ctx, first.ID+1000)
	wantNotFound(t, err, "unknown approval")

	// Other components and environments are not touched by a new plan.
	app := approval("team/web", "app", at(time.Second))
	api := approval("team/api", "db", at(time.Second))
	must(t, s.CreateApproval(ctx, app))
	must(t, s.CreateApproval(ctx, api))

	// A new plan of the same component makes the pending approval stale.
	second := approval("team/web", "db", at(time.Minute))
	must(t, s.CreateApproval(ctx, second))
	if second.ID == first.ID {
		t.Fatalf("second approval reuses ID %d", first.ID)
	}
	equal(t, "first approval after a second plan", approvalStatus(t, s, first.ID), store.ApprovalStale)
	equal(t, "second approval", approvalStatus(t, s, second.ID), store.ApprovalPending)
	equal(t, "approval of another component", approvalStatus(t, s, app.ID), store.ApprovalPending)
	equal(t, "approval in another environment", approvalStatus(t, s, api.ID), store.ApprovalPending)

	// An approved but unapplied plan goes stale too; who approved it is kept.
	must(t, s.DecideApproval(ctx, second.ID, store.ApprovalPending, store.ApprovalApproved, "bob", "ok", at(2*time.Minute)))
	must(t, s.CreateApproval(ctx, approval("team/web", "db", at(3*time.Minute))))
	got, err = s.Approval(ctx, second.ID)
	must(t, err)
	if got.Status != store.ApprovalStale || got.DecidedBy != "bob" {
		t.Errorf("approved approval after a new plan: status %q, decided by %q; want stale, bob", got.Status, got.DecidedBy)
	}

	// A final decision stays final.
	must(t, s.DecideApproval(ctx, app.ID, store.ApprovalPending, store.ApprovalRejected, "bob", "no", at(4*time.Minute)))
	must(t, s.CreateApproval(ctx, approval("team/web", "app", at(5*time.Minute))))
	equal(t, "rejected approval after a new plan", approvalStatus(t, s, app.ID), store.ApprovalRejected)
}

func testOpenApproval(t *testing.T, s store.Store) {
	ctx := t.Context()
	_, err := s.OpenApproval(ctx, "team/web", "db")
	wantNotFound(t, err, "open approval of a component never planned")

	a := approval("team/web", "db", at(0))
	must(t, s.CreateApproval(ctx, a))
	must(t, s.CreateApproval(ctx, approval("team/api", "db", at(time.Second))))
	open, err := s.OpenApproval(ctx, "team/web", "db")
	must(t, err)
	equal(t, "pending open approval", open, *a)

	must(t, s.DecideApproval(ctx, a.ID, store.ApprovalPending, store.ApprovalApproved, "bob", "", at(time.Minute)))
	open, err = s.OpenApproval(ctx, "team/web", "db")
	must(t, err)
	if open.ID != a.ID || open.Status != store.ApprovalApproved {
		t.Errorf("open approval after approving: %d %s, want %d approved", open.ID, open.Status, a.ID)
	}
	must(t, s.DecideApproval(ctx, a.ID, store.ApprovalApproved, store.ApprovalApplied, "alice", "", at(2*time.Minute)))
	_, err = s.OpenApproval(ctx, "team/web", "db")
	wantNotFound(t, err, "open approval after applying")

	b := approval("team/web", "db", at(time.Hour))
	must(t, s.CreateApproval(ctx, b))
	open, err = s.OpenApproval(ctx, "team/web", "db")
	must(t, err)
	equal(t, "open approval after a new plan", open.ID, b.ID)
	must(t, s.DecideApproval(ctx, b.ID, store.ApprovalPending, store.ApprovalRejected, "bob", "too risky", at(2*time.Hour)))
	_, err = s.OpenApproval(ctx, "team/web", "db")
	wantNotFound(t, err, "open approval after rejecting")
	_, err = s.OpenApproval(ctx, "team/web", "app")
	wantNotFound(t, err, "open approval of another component")
}

func testListApprovals(t *testing.T, s store.Store) {
	ctx := t.Context()
	none, err := s.ListApprovals(ctx, store.ApprovalFilter{})
	must(t, err)
	if len(none) != 0 {
		t.Errorf("new store lists approvals %v", approvalIDs(none))
	}
	webDB := approval("team/web", "db", at(0))
	apiDB := approval("team/api", "db", at(time.Second))
	webApp := approval("team/web", "app", at(2*time.Second))
	webDB2 := approval("team/web", "db", at(3*time.Second)) // makes webDB stale
	for _, a := range []*store.Approval{webDB, apiDB, webApp, webDB2} {
		must(t, s.CreateApproval(ctx, a))
	}
	must(t, s.DecideApproval(ctx, webApp.ID, store.ApprovalPending, store.ApprovalApproved, "bob", "", at(time.Minute)))

	list := func(env string, statuses ...string) []int64 {
		t.Helper()
		as, err := s.ListApprovals(ctx, store.ApprovalFilter{Env: env, Statuses: statuses})
		must(t, err)
		return approvalIDs(as)
	}
	equal(t, "team/web, any status, oldest first", list("team/web"), []int64{webDB.ID, webApp.ID, webDB2.ID})
	equal(t, "all environments", list(""), []int64{webDB.ID, apiDB.ID, webApp.ID, webDB2.ID})
	equal(t, "team/web pending", list("team/web", store.ApprovalPending), []int64{webDB2.ID})
	equal(t, "team/web pending or approved", list("team/web", store.ApprovalPending, store.ApprovalApproved),
		[]int64{webApp.ID, webDB2.ID})
	equal(t, "all environments pending", list("", store.ApprovalPending), []int64{apiDB.ID, webDB2.ID})
	equal(t, "team/web stale", list("team/web", store.ApprovalStale), []int64{webDB.ID})
	equal(t, "team/web applied", list("team/web", store.ApprovalApplied), []int64{})
	equal(t, "unknown environment", list("team/none"), []int64{})

	page := func(after int64, limit int) []int64 {
		t.Helper()
		as, err := s.ListApprovals(ctx, store.ApprovalFilter{After: after, Limit: limit})
		must(t, err)
		return approvalIDs(as)
	}
	equal(t, "first page of two", page(0, 2), []int64{webDB.ID, apiDB.ID})
	equal(t, "the page after it", page(apiDB.ID, 2), []int64{webApp.ID, webDB2.ID})
	equal(t, "past the end", page(webDB2.ID, 2), []int64{})

	newest := func(env, component string, limit int) []int64 {
		t.Helper()
		as, err := s.ListApprovals(ctx, store.ApprovalFilter{Env: env, Component: component, Limit: limit, NewestFirst: true})
		must(t, err)
		return approvalIDs(as)
	}
	equal(t, "team/web db, newest first", newest("team/web", "db", 0), []int64{webDB2.ID, webDB.ID})
	equal(t, "team/web db, the newest", newest("team/web", "db", 1), []int64{webDB2.ID})
	equal(t, "db in every environment, newest first", newest("", "db", 0), []int64{webDB2.ID, apiDB.ID, webDB.ID})
	equal(t, "an unknown component", newest("team/web", "none", 0), []int64{})

	as, err := s.ListApprovals(ctx, store.ApprovalFilter{Env: "team/api"})
	must(t, err)
	if len(as) == 1 {
		equal(t, "listed approval", as[0], *apiDB)
	}
}

func testDecideApproval(t *testing.T, s store.Store) {
	ctx := t.Context()
	a := approval("team/web", "db", at(0))
	must(t, s.CreateApproval(ctx, a))
	decided := at(time.Minute).In(time.FixedZone("CET", 3600))
	must(t, s.DecideApproval(ctx, a.ID, store.ApprovalPending, store.ApprovalApproved, "bob", "ticket-7", decided))
	got, err := s.Approval(ctx, a.ID)
	must(t, err)
	want := *a
	want.Status, want.DecidedBy, want.Reason, want.DecidedAt = store.ApprovalApproved, "bob", "ticket-7", at(time.Minute)
	equal(t, "approved approval", got, want)

	// Someone else deciding from the status they last saw loses, and changes nothing.
	err = s.DecideApproval(ctx, a.ID, store.ApprovalPending, store.ApprovalApproved, "carol", "me too", at(2*time.Minute))
	wantConflict(t, err, "approving an approved approval", store.ApprovalApproved)
	err = s.DecideApproval(ctx, a.ID, store.ApprovalPending, store.ApprovalRejected, "carol", "no", at(2*time.Minute))
	wantConflict(t, err, "rejecting an approved approval", store.ApprovalApproved)
	got, err = s.Approval(ctx, a.ID)
	must(t, err)
	equal(t, "approval after losing decisions", got, want)

	err = s.DecideApproval(ctx, a.ID+1000, store.ApprovalPending, store.ApprovalApproved, "bob", "", at(0))
	wantNotFound(t, err, "deciding an unknown approval")
	if errors.Is(err, store.ErrConflict) {
		t.Errorf("deciding an unknown approval: err = %v is also ErrConflict", err)
	}

	must(t, s.DecideApproval(ctx, a.ID, store.ApprovalApproved, store.ApprovalApplied, "alice", "apply r9", at(time.Hour)))
	got, err = s.Approval(ctx, a.ID)
	must(t, err)
	if got.Status != store.ApprovalApplied || got.DecidedBy != "alice" || !got.DecidedAt.Equal(at(time.Hour)) {
		t.Errorf("applied approval: %+v", got)
	}
}

// testDecideApprovalRace has several people approve one approval at once:
// exactly one may win.
func testDecideApprovalRace(t *testing.T, s store.Store) {
	const deciders = 8
	ctx := t.Context()
	a := approval("team/web", "db", at(0))
	must(t, s.CreateApproval(ctx, a))
	errs := make([]error, deciders)
	var wg sync.WaitGroup
	for i := range deciders {
		wg.Go(func() {
			errs[i] = s.DecideApproval(ctx, a.ID, store.ApprovalPending, store.ApprovalApproved, "bob", "", at(time.Minute))
		})
	}
	wg.Wait()
	won := 0
	for _, err := range errs {
		switch {
		case err == nil:
			won++
		case !errors.Is(err, store.ErrConflict):
			t.Errorf("losing decider: err = %v, want store.ErrConflict", err)
		}
	}
	if won != 1 {
		t.Errorf("%d of %d racing deciders won, want exactly 1", won, deciders)
	}
}
