package knit

import (
	"testing"
	"time"

	"knit.dev/knit/internal/spec"
	"knit.dev/knit/internal/store"
	"knit.dev/knit/internal/view"
)

// webFacts is pipeline web: dev (soak 10m) → prod (open 09:00-17:00 UTC but
// not 12:00-13:00, one approval by someone other than the author), with
// release r-1 by alice (verified: a token's or a trusted signature's)
// verified in dev at 08:00.
func webFacts() *PipelineFacts {
	return &PipelineFacts{
		Def: spec.Pipeline{Spec: spec.PipelineSpec{TeamName: "shop", Stages: []spec.Stage{
			{Name: "dev", Soak: "10m"},
			{Name: "prod", Windows: &spec.Windows{
				Allow: []spec.Window{{Schedule: "0 9 * * *", Duration: "8h"}},
				Deny:  []spec.Window{{Schedule: "0 12 * * *", Duration: "1h"}}},
				Approval: &spec.StageApproval{Required: 1, RequireOtherApprover: true}},
		}}},
		Releases: []view.ReleaseRecord{{ID: "r-1", Seq: 1, Author: "alice", AuthorVerified: true}},
		States:   []view.StageState{{Release: "r-1", Stage: "dev", State: store.StageSucceeded, VerifiedAt: clockAt("08:00")}},
	}
}

func clockAt(hm string) time.Time {
	t, _ := time.Parse("15:04", hm)
	return time.Date(2026, 11, 26, t.Hour(), t.Minute(), 0, 0, time.UTC)
}

func waiting(t *testing.T, f *PipelineFacts, at string) *view.Waiting {
	t.Helper()
	return f.Status(clockAt(at)).Stages[1].Waiting
}

// TestPromotionRules judges one release at the times a fake clock gives:
// soaking, then its window closed, then open, then denied, then awaiting
// an approval its author's does not count for, then ready.
func TestPromotionRules(t *testing.T) {
	f := webFacts()
	for _, c := range []struct{ at, reason string }{
		{"08:05", view.WaitSoaking}, {"08:30", view.WaitWindowClosed}, {"09:00", view.WaitAwaitingApproval},
		{"12:30", view.WaitWindowClosed}, {"17:00", view.WaitWindowClosed},
	} {
		if w := waiting(t, f, c.at); w == nil || w.Reason != c.reason {
			t.Errorf("at %s: %+v, want %s", c.at, w, c.reason)
		}
	}
	if w := waiting(t, f, "08:05"); !w.Until.Equal(clockAt("08:10")) {
		t.Errorf("soak ends at %s, want 08:10", w.Until)
	}
	if w := waiting(t, f, "08:30"); !w.Until.Equal(clockAt("09:00")) {
		t.Errorf("the window opens at %s, want 09:00", w.Until)
	}
	f.Approvals = []view.PromotionApproval{{Release: "r-1", Stage: "prod", Actor: "alice"}}
	if w := waiting(t, f, "10:00"); w.Reason != view.WaitAwaitingApproval {
		t.Errorf("the author's own approval counted: %+v", w)
	}
	f.Approvals = append(f.Approvals, view.PromotionApproval{Release: "r-1", Stage: "prod", Actor: "bob"})
	if w := waiting(t, f, "10:00"); w.Reason != view.WaitReady {
		t.Errorf("after bob's approval: %+v, want Ready", w)
	}
	if w := waiting(t, f, "12:30"); w.Reason != view.WaitWindowClosed {
		t.Errorf("approved but in the deny window: %+v, want WindowClosed", w)
	}
	f.Approvals = []view.PromotionApproval{{Release: "r-1", Stage: "prod", Actor: "root", Forced: true}}
	if w := waiting(t, f, "08:01"); w.Reason != view.WaitReady || !w.Forced {
		t.Errorf("forced: %+v, want Ready past soak and window", w)
	}
}

// TestAFailedReleaseNeverMovesOnButANewerOneReplacesIt: a release failed
// in prod stays VerificationFailed there; a newer one verified in dev is
// next in line; one applying blocks the stage.
func TestAFailedReleaseNeverMovesOnButANewerOneReplacesIt(t *testing.T) {
	f := webFacts()
	f.Def.Spec.Stages[1].Windows, f.Def.Spec.Stages[1].Approval = nil, nil
	f.States = append(f.States, view.StageState{Release: "r-1", Stage: "prod", State: store.StageFailed, Reason: view.WaitVerificationFailed})
	if w := waiting(t, f, "10:00"); w == nil || w.Release != "r-1" || w.Reason != view.WaitVerificationFailed {
		t.Fatalf("prod: %+v, want r-1 VerificationFailed", w)
	}
	f.Releases = append([]view.ReleaseRecord{{ID: "r-2", Seq: 2, Author: "alice"}}, f.Releases...)
	f.States = append(f.States, view.StageState{Release: "r-2", Stage: "dev", State: store.StageSucceeded, VerifiedAt: clockAt("09:00")})
	if w := waiting(t, f, "10:00"); w == nil || w.Release != "r-2" || w.Reason != view.WaitReady {
		t.Fatalf("prod: %+v, want r-2 Ready", w)
	}
	if dev := f.Status(clockAt("10:00")).Stages[0]; dev.Current == nil || dev.Current.Release != "r-2" {
		t.Fatalf("dev holds %+v, want r-2", dev.Current)
	}
	f.States = append(f.States, view.StageState{Release: "r-2", Stage: "prod", State: store.StageApplying, RunID: "run-9"})
	if w := waiting(t, f, "10:00"); w.Release != "r-2" || w.Reason != view.WaitApplying {
		t.Fatalf("prod: %+v, want r-2 Applying", w)
	}
}

// TestAnUnverifiedReleaseTakesOneApproverMore: in a stage requiring
// another approver, a release whose author is only claimed takes one
// distinct approver more than required (any of them may be its author,
// so required of them are not), its claimed author's approval counting;
// a verified author's approval never counts; a stage without the rule
// counts every approver.
func TestAnUnverifiedReleaseTakesOneApproverMore(t *testing.T) {
	for _, c := range []struct {
		required  int
		other     bool
		verified  bool
		approvers []string
		reason    string
	}{
		{1, true, false, []string{"bob"}, view.WaitAwaitingApproval},
		{1, true, false, []string{"alice"}, view.WaitAwaitingApproval},
		{1, true, false, []string{"alice", "bob"}, view.WaitReady},
		{2, true, false, []string{"bob", "carol"}, view.WaitAwaitingApproval},
		{2, true, false, []string{"alice", "bob", "carol"}, view.WaitReady},
		{2, true, true, []string{"alice", "bob"}, view.WaitAwaitingApproval},
		{2, true, true, []string{"bob", "carol"}, view.WaitReady},
		{1, false, false, []string{"alice"}, view.WaitReady},
	} {
		f := webFacts()
		f.Def.Spec.Stages[1].Approval = &spec.StageApproval{Required: c.required, RequireOtherApprover: c.other}
		f.Releases[0].AuthorVerified = c.verified
		for _, a := range c.approvers {
			f.Approvals = append(f.Approvals, view.PromotionApproval{Release: "r-1", Stage: "prod", Actor: a})
		}
		if w := waiting(t, f, "10:00"); w.Reason != c.reason {
			t.Errorf("required %d, other %v, alice's release verified %v, approved by %v: %s (%s), want %s",
				c.required, c.other, c.verified, c.approvers, w.Reason, w.Message, c.reason)
		}
	}
}
