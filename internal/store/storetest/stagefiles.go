package storetest

import (
	"errors"
	"testing"

	"knit.dev/knit/internal/store"
)

// testStageFiles: a stage file is written only from the version its
// writer read, every field kept, each pipeline's apart; its audit is in
// the same transaction.
func testStageFiles(t *testing.T, s store.Store) {
	ctx := t.Context()
	none, err := s.StageFiles(ctx, "web")
	must(t, err)
	if len(none) != 0 {
		t.Fatalf("stage files before any: %+v", none)
	}
	f := store.StageFile{Pipeline: "web", Stage: "prod", SeenHash: "h1", SeenCommit: "c1"}
	must(t, s.PutStageFile(ctx, f, nil))
	if err := s.PutStageFile(ctx, f, nil); !errors.Is(err, store.ErrConflict) {
		t.Errorf("writing version 0 twice: err = %v, want store.ErrConflict", err)
	}
	f.Version = 1
	f.SeenHash, f.SeenCommit, f.AppliedCommit = "h2", "c2", "c1"
	f.Change = store.StageChange{ID: "c-c2", Commit: "c2", Hash: "h2", Diff: "--- a\n+++ b\n", State: store.StageChangePending,
		Release: "r-1", RunID: "run-1", Reason: "AwaitingApproval", Message: "0 of 1 approvals", Author: "alice", AuthorVerified: true,
		Subject: "prod: 4 replicas", Actor: "knit-serve", ChangedAt: at(5)}
	audit := &store.AuditEvent{Env: "team/prod", Actor: "knit-serve", Action: "promote", Detail: "stage change c-c2 Pending", Time: at(5)}
	must(t, s.PutStageFile(ctx, f, audit))
	other := store.StageFile{Pipeline: "api", Stage: "prod", SeenHash: "x", SeenCommit: "c9"}
	must(t, s.PutStageFile(ctx, other, nil))
	got, err := s.StageFiles(ctx, "web")
	must(t, err)
	f.Version = 2
	equal(t, "stage files", got, []store.StageFile{f})
	evs, err := s.Audit(ctx, store.AuditFilter{Env: "team/prod"})
	must(t, err)
	if len(evs) != 1 || evs[0].Detail != audit.Detail {
		t.Errorf("audit = %+v, want the stage change's", evs)
	}
	stale := f
	stale.Version = 1
	if err := s.PutStageFile(ctx, stale, nil); !errors.Is(err, store.ErrConflict) {
		t.Errorf("writing from a stale version: err = %v, want store.ErrConflict", err)
	}
}
