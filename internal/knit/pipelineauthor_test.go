package knit_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"knit.dev/knit/internal/knit"
	"knit.dev/knit/internal/spec"
	"knit.dev/knit/internal/store"
	"knit.dev/knit/internal/view"
)

// releaseInDev records pipeline web (dev → prod, prod taking one approval
// by someone other than the author) and release r verified in dev.
func releaseInDev(t *testing.T, k *knit.Knit, r store.Release) {
	t.Helper()
	ctx := context.Background()
	p := &spec.Pipeline{Metadata: spec.Metadata{Name: "web"}, Spec: spec.PipelineSpec{TeamName: "shop", Stages: []spec.Stage{
		{Name: "dev", File: "dev.yaml"},
		{Name: "prod", File: "prod.yaml", Approval: &spec.StageApproval{Required: 1, RequireOtherApprover: true}}}}}
	if err := k.PutPipeline(ctx, p, "c1", map[string]string{"dev": "shop/dev", "prod": "shop/prod"}); err != nil {
		t.Fatal(err)
	}
	r.Pipeline = "web"
	if _, _, err := k.AddRelease(ctx, r); err != nil {
		t.Fatal(err)
	}
	if err := k.SetStage(ctx, view.StageState{Pipeline: "web", Release: r.ID, Stage: "dev", State: store.StageSucceeded}, "", "shop/dev"); err != nil {
		t.Fatal(err)
	}
}

func as(name string) context.Context {
	return knit.WithCaller(context.Background(), view.Token{Name: name, Role: store.RoleOperator, Teams: []string{"shop"}})
}

// TestAnUnverifiedReleaseTakesTwoDistinctApprovers: bob commits without
// a signature, claiming alice as the author. For the stage's
// requireOtherApprover the release is nobody's: bob's token approving it
// is one of the two distinct tokens it takes (the same token again counts
// once, so bob alone never lets it in), and a second token's approval,
// even the claimed author's, lets it in.
func TestAnUnverifiedReleaseTakesTwoDistinctApprovers(t *testing.T) {
	k := open(t)
	releaseInDev(t, k, store.Release{ID: "r-1", Commit: "c1", Author: "alice"})
	for range 2 {
		st, err := knit.NewPromote(k, knit.PromoteOptions{Pipeline: "web", Release: "r-1", Stage: "prod", Actor: "bob", Reason: "looks fine", Force: false}).Run(as("bob"))
		if err != nil {
			t.Fatalf("bob approving the release an unsigned commit says is alice's: %v", err)
		}
		w := st.Waiting
		if w == nil || w.Reason != view.WaitAwaitingApproval || !strings.Contains(w.Message, "1 of 2 approvals by distinct tokens") ||
			w.Approval == nil || *w.Approval != (view.WaitApproval{Required: 2, Author: "alice"}) {
			t.Fatalf("prod after bob's approval of the unverified release: %+v (%+v), want AwaitingApproval 1 of 2", w, w.Approval)
		}
	}
	st, err := knit.NewPromote(k, knit.PromoteOptions{Pipeline: "web", Release: "r-1", Stage: "prod", Actor: "alice", Reason: "reviewed", Force: false}).Run(as("alice"))
	if err != nil || st.Waiting == nil || st.Waiting.Reason != view.WaitReady {
		t.Fatalf("prod after a second token's approval: %+v, %v; want Ready", st.Waiting, err)
	}
	rs, err := knit.NewRecords(k).Releases(as("alice"), "web", "")
	if err != nil || len(rs) != 1 || rs[0].AuthorVerified {
		t.Fatalf("releases: %+v, %v; want r-1, its author not verified", rs, err)
	}
}

// TestAnUnverifiedAuthorsOwnApprovalIsOneOfTwo: a release an unsigned
// commit says is bob's, approved by bob's token: not refused (the claim
// proves nothing either way), one approval of two.
func TestAnUnverifiedAuthorsOwnApprovalIsOneOfTwo(t *testing.T) {
	k := open(t)
	releaseInDev(t, k, store.Release{ID: "r-1", Commit: "c1", Author: "bob"})
	st, err := knit.NewPromote(k, knit.PromoteOptions{Pipeline: "web", Release: "r-1", Stage: "prod", Actor: "bob", Reason: "mine", Force: false}).Run(as("bob"))
	if err != nil || st.Waiting == nil || st.Waiting.Reason != view.WaitAwaitingApproval {
		t.Fatalf("bob approving the unverified release claiming him: %+v, %v; want AwaitingApproval", st.Waiting, err)
	}
	if st, err = knit.NewPromote(k, knit.PromoteOptions{Pipeline: "web", Release: "r-1", Stage: "prod", Actor: "carol", Reason: "", Force: false}).Run(as("carol")); err != nil || st.Waiting.Reason != view.WaitReady {
		t.Fatalf("after carol's approval: %+v, %v; want Ready", st.Waiting, err)
	}
}

// TestAVerifiedAuthorCannotApproveTheirRelease: a release whose author
// (bob) is verified refuses bob's approval (ErrOwnRelease), and another
// token's one approval lets it in.
func TestAVerifiedAuthorCannotApproveTheirRelease(t *testing.T) {
	k := open(t)
	releaseInDev(t, k, store.Release{ID: "r-1", Commit: "c1", Author: "bob", AuthorVerified: true})
	if _, err := knit.NewPromote(k, knit.PromoteOptions{Pipeline: "web", Release: "r-1", Stage: "prod", Actor: "bob", Reason: "mine", Force: false}).Run(as("bob")); !errors.Is(err, knit.ErrOwnRelease) {
		t.Fatalf("bob approving his verified release: %v, want ErrOwnRelease", err)
	}
	st, err := knit.NewPromote(k, knit.PromoteOptions{Pipeline: "web", Release: "r-1", Stage: "prod", Actor: "alice", Reason: "", Force: false}).Run(as("alice"))
	if err != nil || st.Waiting == nil || st.Waiting.Reason != view.WaitReady ||
		st.Waiting.Approval == nil || *st.Waiting.Approval != (view.WaitApproval{Required: 1, Author: "bob", AuthorVerified: true}) {
		t.Fatalf("prod after alice's approval alone: %+v, %v; want Ready", st.Waiting, err)
	}
}

// TestAReleaseATokenAddsIsThatTokens: a caller's token adding a release
// is its author, verified, whatever author the request claims.
func TestAReleaseATokenAddsIsThatTokens(t *testing.T) {
	k := open(t)
	ctx := context.Background()
	p := &spec.Pipeline{Metadata: spec.Metadata{Name: "web"}, Spec: spec.PipelineSpec{TeamName: "shop", Stages: []spec.Stage{{Name: "dev", File: "dev.yaml"}}}}
	if err := k.PutPipeline(ctx, p, "c1", map[string]string{"dev": "shop/dev"}); err != nil {
		t.Fatal(err)
	}
	r, _, err := k.AddRelease(as("carol"), store.Release{Pipeline: "web", ID: "r-1", Commit: "c1", Author: "alice"})
	if err != nil || r.Author != "carol" || !r.AuthorVerified {
		t.Fatalf("a release carol's token added: %+v, %v; want carol's, verified", r, err)
	}
}
