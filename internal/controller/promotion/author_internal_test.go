package promotion

import (
	"context"
	"errors"
	"strings"
	"testing"

	"knit.dev/knit/internal/controller/clock"
	"knit.dev/knit/internal/gitwatch"
	"knit.dev/knit/internal/knit"
	"knit.dev/knit/internal/store"
	"knit.dev/knit/internal/view"
)

// TestAReleasesAuthorIsVerifiedOnlyByItsSignature: a commit whose
// signature verified is its signer's release, whatever author it claims;
// an unsigned one (or one signed by a key the server does not trust,
// which gitwatch gives no signer) keeps the claimed name, not verified.
func TestAReleasesAuthorIsVerifiedOnlyByItsSignature(t *testing.T) {
	for _, c := range []struct {
		commit   gitwatch.Commit
		author   string
		verified bool
	}{
		{gitwatch.Commit{Author: "alice", Signer: "bob"}, "bob", true},
		{gitwatch.Commit{Author: "alice"}, "alice", false},
	} {
		if author, verified := authorOf(c.commit); author != c.author || verified != c.verified {
			t.Errorf("commit %+v: author %q verified %v, want %q %v", c.commit, author, verified, c.author, c.verified)
		}
		actor, source := runAuthor(view.ReleaseRecord{Author: c.author, AuthorVerified: c.verified})
		if want := map[bool]string{true: SourcePipeline, false: knit.SourceGit}[c.verified]; actor != c.author || source != want {
			t.Errorf("the run applying %s's release (verified %v): actor %q source %q, want %q %q", c.author, c.verified, actor, source, c.author, want)
		}
	}
}

// TestAStageGateTrustsOnlyAVerifiedReleaseAuthor: dev's environment
// gates its plan and requires another approver. The release comes from
// a commit claiming alice, unsigned: the run applying it is alice's
// unverified change, so bob's approval alone (on main: the server's own
// run, which anyone but "knit-serve" approved alone) is recorded and
// applies nothing; alice's then carries it out.
func TestAStageGateTrustsOnlyAVerifiedReleaseAuthor(t *testing.T) {
	ctx := context.Background()
	fc := clock.NewFake(t0)
	gated := strings.Replace(stageFile("dev"), "  autoApprove: true\n", "  autoApprove: false\n  approval: {requireOtherApprover: true}\n", 1)
	k, c, _ := newController(t, fc, map[string]string{"templates/web.yaml": tmpl, "stages/dev.yaml": gated,
		"stages/prod.yaml": stageFile("prod"), "pipelines/web.yaml": pipeline})
	c.Step(ctx) // the release enters dev; its plan waits for an approval
	pending, err := knit.NewRecords(k).Approvals(ctx, "shop/dev", store.ApprovalPending)
	if err != nil || len(pending) != 1 {
		t.Fatalf("dev's pending approvals: %+v, %v", pending, err)
	}
	f, err := k.Facts(ctx, "web")
	if err != nil || len(f.States) != 1 {
		t.Fatalf("stage states: %+v, %v", f, err)
	}
	run, err := k.RunRecord(ctx, f.States[0].RunID)
	if err != nil || run.Run.Actor != "alice" || run.Run.Source != knit.SourceGit {
		t.Fatalf("dev's run: %+v, %v; want alice's, source git (unverified)", run.Run, err)
	}
	decide := func(actor string) error {
		_, err := knit.NewDecide(k, knit.DecideRequest{EnvRef: "shop/dev", Component: pending[0].Component, Approve: true,
			Actor: actor, PlanChecksum: pending[0].PlanChecksum}, nil).Run(ctx)
		return err
	}
	if err := decide("bob"); !errors.Is(err, knit.ErrSecondApprover) {
		t.Fatalf("bob alone approving the plan of alice's unsigned release: %v, want ErrSecondApprover", err)
	}
	if err := decide("alice"); err != nil {
		t.Fatalf("alice, the second approver: %v", err)
	}
}
