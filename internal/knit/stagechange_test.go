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

// TestAStageChangeIsApprovedLikeAPromotion (issue 37 item 3): prod
// (requireOtherApprover) holds r-1; bob's signed commit changed prod's own
// file. The change is Pending, its author's approval is refused, another
// team's token cannot see it, an approval of an older change is refused
// naming the newer one, --force needs an admin. While it waits, the next
// release ready for prod waits for it; alice's approval makes it Ready.
func TestAStageChangeIsApprovedLikeAPromotion(t *testing.T) {
	ctx := context.Background()
	k := open(t)
	releaseInDev(t, k, store.Release{ID: "r-1", Commit: "c1", Author: "carol", AuthorVerified: true})
	if err := k.SetStage(ctx, view.StageState{Pipeline: "web", Release: "r-1", Stage: "prod", State: store.StageSucceeded}, "", "shop/prod"); err != nil {
		t.Fatal(err)
	}
	releaseInDev(t, k, store.Release{ID: "r-2", Commit: "c3", Author: "carol", AuthorVerified: true})
	if _, err := knit.NewPromote(k, knit.PromoteOptions{Pipeline: "web", Release: "r-2", Stage: "prod", Actor: "dave"}).Run(as("dave")); err != nil {
		t.Fatal(err)
	}
	if err := k.PutStageFile(ctx, view.StageFileRecord{Pipeline: "web", Stage: "prod", SeenHash: "h2", SeenCommit: "c2",
		Change: view.StageChangeRecord{ID: "c-c2", Commit: "c2", Hash: "h2", State: store.StageChangePending, Author: "bob", AuthorVerified: true,
			Diff: "-replicas: 3\n+replicas: 4\n"}}, "shop/prod", true); err != nil {
		t.Fatal(err)
	}
	promote := func(ctx context.Context, actor, change string, force bool) (view.Stage, error) {
		return knit.NewPromote(k, knit.PromoteOptions{Pipeline: "web", Change: change, Stage: "prod", Actor: actor, Force: force}).Run(ctx)
	}
	st, err := knit.NewRecords(k).PipelineStatus(ctx, "web")
	if err != nil {
		t.Fatal(err)
	}
	prod := st.Stages[1]
	if c := prod.StageChange; prod.ApplyStageChanges != "pending" || c == nil || c.State != view.StageChangePending || c.Reason != view.WaitAwaitingApproval ||
		!strings.Contains(c.Message, "knit promote web --change c-c2 --to prod") || c.Approval == nil || c.Approval.Required != 1 {
		t.Fatalf("prod's change: %s %+v", prod.ApplyStageChanges, c)
	}
	if w := prod.Waiting; w == nil || w.Release != "r-2" || w.Reason != view.WaitAwaitingApproval || !strings.Contains(w.Message, "c-c2 of prod's own file is pending") {
		t.Errorf("r-2, approved for prod, while prod's change waits: %+v", w)
	}
	if _, err := promote(as("bob"), "bob", "c-c2", false); !errors.Is(err, knit.ErrOwnRelease) {
		t.Errorf("the change's author approving it: %v, want ErrOwnRelease", err)
	}
	other := knit.WithCaller(ctx, view.Token{Name: "mallory", Role: store.RoleOperator, Teams: []string{"pay"}})
	if _, err := promote(other, "mallory", "c-c2", false); !errors.Is(err, knit.ErrForbidden) {
		t.Errorf("another team's token approving it: %v, want ErrForbidden", err)
	}
	if _, err := promote(as("alice"), "alice", "c-c1", false); !errors.Is(err, store.ErrConflict) || !strings.Contains(err.Error(), "c-c2") {
		t.Errorf("approving a replaced change: %v, want a conflict naming c-c2", err)
	}
	if _, err := promote(as("alice"), "alice", "c-c2", true); !errors.Is(err, knit.ErrForbidden) {
		t.Errorf("an operator's --force: %v, want ErrForbidden", err)
	}
	got, err := promote(as("alice"), "alice", "c-c2", false)
	if err != nil {
		t.Fatal(err)
	}
	if c := got.StageChange; c == nil || c.Reason != view.WaitReady || len(c.Approvals) != 1 || c.Approvals[0] != "alice" {
		t.Errorf("prod's change after alice's approval: %+v, want Ready", c)
	}
	audit, err := knit.NewRecords(k).Audit(ctx, knit.AuditFilter{})
	if err != nil {
		t.Fatal(err)
	}
	approved := false
	for _, a := range audit.Items {
		approved = approved || a.Action == knit.AuditPromoteApprove && a.Actor == "alice" && strings.Contains(a.Detail, "stage change c-c2")
	}
	if !approved {
		t.Errorf("no audit entry of alice's approval: %+v", audit.Items)
	}
}
