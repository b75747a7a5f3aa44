package knit_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"knit.dev/knit/internal/engine"
	"knit.dev/knit/internal/knit"
	"knit.dev/knit/internal/store"
	"knit.dev/knit/internal/view"
)

// otherApprover is pay/prod requiring another approver than the change's author.
func otherApprover() string {
	return strings.Replace(envDoc("pay", "prod"), "  autoApprove: true\n", "  autoApprove: true\n  approval: {requireOtherApprover: true}\n", 1)
}

// TestRequireOtherApproverTrustsOnlyVerifiedAuthors: a change whose
// author is verified (a token, a signed commit) may not be approved by
// that author and may be by anyone else alone; a change from an unsigned
// commit, whose author is only a claimed name, takes two distinct
// approvers: the first is recorded and applies nothing, the same one
// again counts once, a second one carries it out.
func TestRequireOtherApproverTrustsOnlyVerifiedAuthors(t *testing.T) {
	ctx := context.Background()
	k := open(t)
	waiting := func() view.Approval {
		t.Helper()
		pending, err := knit.NewRecords(k).Approvals(ctx, "pay/prod", store.ApprovalPending)
		if err != nil || len(pending) != 1 {
			t.Fatalf("approvals %+v %v", pending, err)
		}
		return pending[0]
	}
	approve := func(actor string, a view.Approval) error {
		_, err := knit.NewDecide(k, knit.DecideRequest{EnvRef: "pay/prod", Component: "app", Approve: true, Actor: actor, PlanChecksum: a.PlanChecksum}, nil).Run(ctx)
		return err
	}
	run := func(source, actor string, size int) view.Approval {
		t.Helper()
		env := parse(t, strings.Replace(otherApprover(), "{name: size, value: 1}", "{name: size, value: "+string(rune('0'+size))+"}", 1))
		if _, err := knit.NewRun(k, knit.RunRequest{Kind: engine.KindApply, Env: env, Actor: actor, Source: source}).Run(ctx); err != nil {
			t.Fatal(err)
		}
		return waiting()
	}

	// Verified (a token's run, a signed commit's): the author is refused, another alone suffices.
	for i, source := range []string{"api", knit.SourceGitSigned} {
		a := run(source, "bob", 1+2*i)
		if err := approve("bob", a); !errors.Is(err, knit.ErrSelfApproval) {
			t.Fatalf("%s: bob approving his own change: %v", source, err)
		}
		if err := approve("alice", a); err != nil {
			t.Fatalf("%s: alice approving bob's change: %v", source, err)
		}
		if _, err := knit.NewRun(k, knit.RunRequest{Kind: engine.KindApply, EnvRef: "pay/prod", Actor: "alice"}).Run(ctx); err != nil {
			t.Fatal(err)
		}
	}

	// An unsigned commit claiming bob: alice alone (twice) is not enough, bob then is.
	a := run(knit.SourceGit, "bob", 6)
	for range 2 {
		if err := approve("alice", a); !errors.Is(err, knit.ErrSecondApprover) || !strings.Contains(err.Error(), "two distinct tokens") {
			t.Fatalf("alice alone approving an unsigned commit's change: %v", err)
		}
		if got, _ := knit.NewRecords(k).Approvals(ctx, "pay/prod", store.ApprovalPending); len(got) != 1 {
			t.Fatalf("the first approval decided the plan: %+v", got)
		}
	}
	if err := approve("bob", a); err != nil {
		t.Fatalf("a second approver: %v", err)
	}
	if got, _ := knit.NewRecords(k).Approvals(ctx, "pay/prod", store.ApprovalApproved); len(got) != 1 || got[0].DecidedBy != "bob" {
		t.Fatalf("approved after two approvers: %+v", got)
	}
}

// TestAResumedChangeTakesTwoApprovers: a resume's actor is the server and
// its change the interrupted run's, whose author may have been a name an
// unsigned commit claimed: where another approver is required, one token
// alone (the claimed author's, or anyone's) never carries it out.
func TestAResumedChangeTakesTwoApprovers(t *testing.T) {
	ctx := context.Background()
	k := open(t)
	if _, err := knit.NewRun(k, knit.RunRequest{Kind: engine.KindApply, Env: parse(t, otherApprover()), Actor: "knit-serve", Source: knit.SourceRecovery}).Run(ctx); err != nil {
		t.Fatal(err)
	}
	pending, err := knit.NewRecords(k).Approvals(ctx, "pay/prod", store.ApprovalPending)
	if err != nil || len(pending) != 1 {
		t.Fatalf("approvals %+v %v", pending, err)
	}
	decide := func(actor string) error {
		_, err := knit.NewDecide(k, knit.DecideRequest{EnvRef: "pay/prod", Component: "app", Approve: true, Actor: actor, PlanChecksum: pending[0].PlanChecksum}, nil).Run(ctx)
		return err
	}
	if err := decide("bob"); !errors.Is(err, knit.ErrSecondApprover) || !strings.Contains(err.Error(), "resume") {
		t.Fatalf("bob alone approving a resumed change: %v", err)
	}
	if err := decide("alice"); err != nil {
		t.Fatalf("a second approver: %v", err)
	}
}
