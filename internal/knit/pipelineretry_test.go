package knit_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"knit.dev/knit/internal/knit"
	"knit.dev/knit/internal/store"
	"knit.dev/knit/internal/view"
)

// TestAFailedReleaseIsPromotedAgain: r-1 failed verification in prod (a
// health endpoint down once); knit promote of the same release starts it
// there again: queued for the server to apply, with its approvals kept
// (no new approval, no new commit), audited as a retry. Another release
// tried there since, or one applying now, refuses it.
func TestAFailedReleaseIsPromotedAgain(t *testing.T) {
	ctx := context.Background()
	k := open(t)
	releaseInDev(t, k, store.Release{ID: "r-1", Commit: "c1", Author: "bob", AuthorVerified: true})
	if _, err := knit.NewPromote(k, knit.PromoteOptions{Pipeline: "web", Release: "r-1", Stage: "prod", Actor: "alice", Reason: "", Force: false}).Run(as("alice")); err != nil {
		t.Fatal(err)
	}
	failed := view.StageState{Pipeline: "web", Release: "r-1", Stage: "prod", State: store.StageFailed,
		Reason: view.WaitVerificationFailed, Message: "health: GET /healthz: 503", RunID: "run-1"}
	if err := k.SetStage(ctx, failed, "", "shop/prod"); err != nil {
		t.Fatal(err)
	}
	st, err := knit.NewPromote(k, knit.PromoteOptions{Pipeline: "web", Release: "r-1", Stage: "prod", Actor: "carol", Reason: "the endpoint is back", Force: false}).Run(as("carol"))
	if err != nil {
		t.Fatalf("promote the failed release again: %v", err)
	}
	if w := st.Waiting; w == nil || w.Release != "r-1" || w.Reason != view.WaitApplying || !strings.Contains(w.Message, "retry by carol (the endpoint is back) after: health: GET /healthz: 503") {
		t.Fatalf("prod after the retry: %+v, want r-1 queued to apply again", st.Waiting)
	}
	if _, err := knit.NewPromote(k, knit.PromoteOptions{Pipeline: "web", Release: "r-1", Stage: "prod", Actor: "carol", Reason: "", Force: false}).Run(as("carol")); !errors.Is(err, store.ErrConflict) || !strings.Contains(err.Error(), "queued in prod already") {
		t.Fatalf("a second retry while queued: %v, want a conflict", err)
	}
	audit, err := knit.NewRecords(k).Audit(ctx, knit.AuditFilter{})
	if err != nil {
		t.Fatal(err)
	}
	retried := false
	for _, a := range audit.Items {
		retried = retried || (a.Action == knit.AuditPromote && a.Actor == "carol" && a.Reason == "Retry")
	}
	if !retried {
		t.Errorf("no audit entry of carol's retry: %+v", audit.Items)
	}

	// A newer release tried in prod since: the old failure is not retried.
	releaseNewer := store.Release{ID: "r-2", Pipeline: "web", Commit: "c2", Author: "bob", AuthorVerified: true}
	if _, _, err := k.AddRelease(ctx, releaseNewer); err != nil {
		t.Fatal(err)
	}
	failed.State, failed.Release = store.StageFailed, "r-2"
	if err := k.SetStage(ctx, view.StageState{Pipeline: "web", Release: "r-1", Stage: "prod", State: store.StageFailed, Reason: view.WaitApplyFailed}, store.StageQueued, "shop/prod"); err != nil {
		t.Fatal(err)
	}
	if err := k.SetStage(ctx, view.StageState{Pipeline: "web", Release: "r-2", Stage: "dev", State: store.StageSucceeded}, "", "shop/dev"); err != nil {
		t.Fatal(err)
	}
	if err := k.SetStage(ctx, failed, "", "shop/prod"); err != nil {
		t.Fatal(err)
	}
	if _, err := knit.NewPromote(k, knit.PromoteOptions{Pipeline: "web", Release: "r-1", Stage: "prod", Actor: "carol", Reason: "", Force: false}).Run(as("carol")); !errors.Is(err, store.ErrConflict) || !strings.Contains(err.Error(), "newer release") {
		t.Fatalf("retry of r-1 after r-2 failed there too: %v, want a conflict naming the newer release", err)
	}
}

// TestARetryKeepsTheStagesGates: a failed release's retry needs the
// approvals its stage takes; one that never had them (an admin forced
// it in) is refused for an operator and forced again by an admin only.
func TestARetryKeepsTheStagesGates(t *testing.T) {
	ctx := context.Background()
	k := open(t)
	releaseInDev(t, k, store.Release{ID: "r-1", Commit: "c1", Author: "bob", AuthorVerified: true})
	if err := k.SetStage(ctx, view.StageState{Pipeline: "web", Release: "r-1", Stage: "prod", State: store.StageFailed, Reason: view.WaitApplyFailed}, "", "shop/prod"); err != nil {
		t.Fatal(err)
	}
	if _, err := knit.NewPromote(k, knit.PromoteOptions{Pipeline: "web", Release: "r-1", Stage: "prod", Actor: "carol", Reason: "", Force: false}).Run(as("carol")); !errors.Is(err, store.ErrConflict) || !strings.Contains(err.Error(), "approval") {
		t.Fatalf("retry without the stage's approval: %v, want a conflict naming the approval", err)
	}
	if _, err := knit.NewPromote(k, knit.PromoteOptions{Pipeline: "web", Release: "r-1", Stage: "prod", Actor: "carol", Reason: "", Force: true}).Run(as("carol")); !errors.Is(err, knit.ErrForbidden) {
		t.Fatalf("an operator forcing a retry: %v, want forbidden", err)
	}
	admin := knit.WithCaller(ctx, view.Token{Name: "root", Role: store.RoleAdmin})
	if st, err := knit.NewPromote(k, knit.PromoteOptions{Pipeline: "web", Release: "r-1", Stage: "prod", Actor: "root", Reason: "", Force: true}).Run(admin); err != nil || st.Waiting == nil || st.Waiting.Reason != view.WaitApplying {
		t.Fatalf("an admin forcing the retry: %+v, %v; want queued", st.Waiting, err)
	}
}

// TestAnotherTeamCannotRetryARelease: pay's operator promoting shop's
// failed release again is refused, and nothing is queued.
func TestAnotherTeamCannotRetryARelease(t *testing.T) {
	ctx := context.Background()
	k := open(t)
	releaseInDev(t, k, store.Release{ID: "r-1", Commit: "c1", Author: "bob", AuthorVerified: true})
	if err := k.SetStage(ctx, view.StageState{Pipeline: "web", Release: "r-1", Stage: "prod", State: store.StageFailed, Reason: view.WaitApplyFailed}, "", "shop/prod"); err != nil {
		t.Fatal(err)
	}
	pay := knit.WithCaller(ctx, view.Token{Name: "paul", Role: store.RoleOperator, Teams: []string{"pay"}})
	if _, err := knit.NewPromote(k, knit.PromoteOptions{Pipeline: "web", Release: "r-1", Stage: "prod", Actor: "paul", Reason: "", Force: false}).Run(pay); !errors.Is(err, knit.ErrForbidden) {
		t.Fatalf("pay's operator retrying shop's release: %v, want forbidden", err)
	}
	st, err := knit.NewRecords(k).PipelineStatus(as("carol"), "web")
	if err != nil || st.Stages[1].Last == nil || st.Stages[1].Last.State != store.StageFailed {
		t.Fatalf("prod after the refused retry: %+v, %v; want r-1 still failed", st.Stages[1].Last, err)
	}
}
