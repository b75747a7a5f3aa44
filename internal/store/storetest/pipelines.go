package storetest

import (
	"errors"
	"testing"
	"time"

	"knit.dev/knit/internal/store"
)

func testPipelines(t *testing.T, s store.Store) {
	ctx := t.Context()
	_, err := s.Pipeline(ctx, "web")
	wantNotFound(t, err, "pipeline never put")
	p := store.Pipeline{Name: "web", Team: "team", Definition: []byte(`{"stages":[]}`), Commit: "c1", UpdatedAt: at(0)}
	must(t, s.PutPipeline(ctx, p))
	p.Commit, p.UpdatedAt = "c2", at(time.Second)
	must(t, s.PutPipeline(ctx, p))
	got, err := s.Pipeline(ctx, "web")
	must(t, err)
	equal(t, "pipeline", got, p)
	all, err := s.ListPipelines(ctx)
	must(t, err)
	equal(t, "pipelines", all, []store.Pipeline{p})

	// Releases are content-addressed: adding one again returns the first.
	r1 := store.Release{Pipeline: "web", ID: "r-1", Template: "t@sha256:a", Params: []byte(`{"v":"1"}`),
		Commit: "c1", Author: "alice", Message: "v1", CreatedAt: at(0)}
	got1, created, err := s.AddRelease(ctx, r1)
	must(t, err)
	r1.Seq = 1
	if !created {
		t.Error("the first release was not created")
	}
	equal(t, "release", got1, r1)
	// A release is its first record's, whose author was not verified:
	// the same content added again by a verified author stays unverified.
	again, created, err := s.AddRelease(ctx, store.Release{Pipeline: "web", ID: "r-1", Template: "other", Commit: "c9", Author: "carol",
		AuthorVerified: true, CreatedAt: at(time.Hour)})
	must(t, err)
	if created {
		t.Error("a release of a known ID was created again")
	}
	equal(t, "the same release", again, r1)
	r2 := store.Release{Pipeline: "web", ID: "r-2", Template: "t@sha256:a", Params: []byte(`{"v":"2"}`),
		Commit: "c2", Author: "bob", AuthorVerified: true, Message: "v2", CreatedAt: at(time.Minute)}
	_, _, err = s.AddRelease(ctx, r2)
	must(t, err)
	r2.Seq = 2
	rs, err := s.Releases(ctx, "web")
	must(t, err)
	equal(t, "releases, newest first", rs, []store.Release{r2, r1})

	// A stage moves only from the state its writer saw.
	applying := store.StageState{Pipeline: "web", Release: "r-1", Stage: "dev", State: store.StageApplying, RunID: "run-1", Actor: "knit-serve", ChangedAt: at(1)}
	must(t, s.SetStage(ctx, applying, "", nil))
	if err := s.SetStage(ctx, applying, "", nil); !errors.Is(err, store.ErrConflict) {
		t.Errorf("applying twice: err = %v, want store.ErrConflict", err)
	}
	done := applying
	done.State, done.ChangedAt, done.VerifiedAt = store.StageSucceeded, at(2), at(2)
	audit := &store.AuditEvent{Env: "team/dev", Actor: "knit-serve", Action: "promote", Detail: "r-1 verified in dev", Time: at(2)}
	must(t, s.SetStage(ctx, done, store.StageApplying, audit))
	states, err := s.StageStates(ctx, "web")
	must(t, err)
	equal(t, "stage states", states, []store.StageState{done})
	hist, err := s.StageHistory(ctx, "web")
	must(t, err)
	equal(t, "history", hist, []store.StageEvent{{Seq: 1, StageState: applying}, {Seq: 2, StageState: done}})
	evs, err := s.Audit(ctx, store.AuditFilter{Env: "team/dev"})
	must(t, err)
	if len(evs) != 1 || evs[0].Action != "promote" {
		t.Errorf("audit = %+v, want the promotion", evs)
	}

	// One approval per person.
	a := store.PromotionApproval{Pipeline: "web", Release: "r-2", Stage: "prod", Actor: "bob", Reason: "ok", ApprovedAt: at(3)}
	must(t, s.ApprovePromotion(ctx, a, nil))
	if err := s.ApprovePromotion(ctx, a, nil); !errors.Is(err, store.ErrConflict) {
		t.Errorf("approving twice: err = %v, want store.ErrConflict", err)
	}
	as, err := s.PromotionApprovals(ctx, "web")
	must(t, err)
	forced := store.PromotionApproval{Pipeline: "web", Release: "r-2", Stage: "prod", Actor: "root", Forced: true, ApprovedAt: at(4)}
	must(t, s.ApprovePromotion(ctx, forced, nil))
	as, err = s.PromotionApprovals(ctx, "web")
	must(t, err)
	equal(t, "approvals", as, []store.PromotionApproval{a, forced})
	none, err := s.PromotionApprovals(ctx, "other")
	must(t, err)
	if len(none) != 0 {
		t.Errorf("another pipeline's approvals: %+v", none)
	}
}
