package engine

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"knit.dev/knit/internal/runner"
	"knit.dev/knit/internal/store"
)

// savedPlan writes a plan file of data and returns the plan that names it.
func savedPlan(t *testing.T, data string) *runner.Plan {
	t.Helper()
	file := filepath.Join(t.TempDir(), "plan.tfplan")
	if err := os.WriteFile(file, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
	return &runner.Plan{Add: 1, File: file, Checksum: bytesSHA256([]byte(data))}
}

// TestApprovalsRequestKeepsThePlanAndKnowsItOpen: a requested approval is
// pending in the store with the plan's bytes, the run knows it open and
// held, and another plan of the component's (other inputs) outdates it.
func TestApprovalsRequestKeepsThePlanAndKnowsItOpen(t *testing.T) {
	e, _ := testEngine(t)
	s := began(t, e, parseEnv(t, pair), KindApply, Options{Actor: "tester"})
	ar := s.approvals
	if ar.hasOpen("db") {
		t.Fatal("db has an open approval before any was asked for")
	}
	id, err := ar.requestApproval("db", "fp-1", savedPlan(t, "plan one"))
	if err != nil {
		t.Fatal(err)
	}
	if h, ok := ar.heldPlan("db"); !ok || h.id != id || !ar.hasOpen("db") {
		t.Fatalf("held %+v %v, open %v: want approval #%d held and open", h, ok, ar.hasOpen("db"), id)
	}
	data, err := e.Store.SavedPlan(context.Background(), id)
	if err != nil || string(data) != "plan one" {
		t.Fatalf("saved plan %q, %v: want the plan's bytes in the store", data, err)
	}
	a, err := ar.openApproval("db")
	if err != nil || a == nil || a.Status != store.ApprovalPending {
		t.Fatalf("open approval %+v, %v: want pending", a, err)
	}
	if why := ar.staleness(*a, "fp-1"); why != "" {
		t.Errorf("the same inputs make it stale: %s", why)
	}
	if why := ar.staleness(*a, "fp-2"); !strings.Contains(why, "changed since the plan") {
		t.Errorf("other inputs: staleness %q", why)
	}
	if err := ar.outdateApproval("db", "fp-2"); err != nil {
		t.Fatal(err)
	}
	if a, err := ar.openApproval("db"); err != nil || a != nil {
		t.Errorf("after a plan from other inputs, open approval %+v, %v: want none", a, err)
	}
}

// TestApprovalsApplyTheApprovedBytes: an approved plan is applied from
// the store's copy (the work dir's file may be gone), and closing it
// records it applied.
func TestApprovalsApplyTheApprovedBytes(t *testing.T) {
	e, _ := testEngine(t)
	s := began(t, e, parseEnv(t, pair), KindApply, Options{Actor: "tester"})
	ar := s.approvals
	plan := savedPlan(t, "approved bytes")
	id, err := ar.requestApproval("db", "fp-1", plan)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := e.Store.DecideApproval(ctx, id, store.ApprovalPending, store.ApprovalApproved, "boss", "ok", e.now()); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(plan.File); err != nil {
		t.Fatal(err)
	}
	ap, why, err := ar.approvedPlan("db", "fp-1")
	if err != nil || ap == nil {
		t.Fatalf("approved plan %v, %q, %v", ap, why, err)
	}
	if data, err := os.ReadFile(ap.plan.File); err != nil || string(data) != "approved bytes" {
		t.Fatalf("the plan applied is %q, %v: want the approved bytes", data, err)
	}
	if err := ar.closeApproval(ap, nil); err != nil {
		t.Fatal(err)
	}
	got, err := e.Store.Approval(ctx, id)
	if err != nil || got.Status != store.ApprovalApplied {
		t.Errorf("approval after its apply: %+v, %v: want applied", got, err)
	}
}

// TestApprovalsStaleWhenThePlanIsNotTheApprovedOne: an approved plan whose
// stored bytes no longer have the approved checksum is never applied.
func TestApprovalsStaleWhenThePlanIsNotTheApprovedOne(t *testing.T) {
	e, _ := testEngine(t)
	s := began(t, e, parseEnv(t, pair), KindApply, Options{Actor: "tester"})
	ar := s.approvals
	id, err := ar.requestApproval("db", "fp-1", savedPlan(t, "approved bytes"))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := e.Store.DecideApproval(ctx, id, store.ApprovalPending, store.ApprovalApproved, "boss", "ok", e.now()); err != nil {
		t.Fatal(err)
	}
	if err := e.Store.SavePlan(ctx, id, []byte("other bytes")); err != nil {
		t.Fatal(err)
	}
	ap, why, err := ar.approvedPlan("db", "fp-1")
	if err != nil || ap != nil || !strings.Contains(why, "missing or changed") {
		t.Fatalf("approved plan %v, %q, %v: want none, stale", ap, why, err)
	}
	if got, err := e.Store.Approval(ctx, id); err != nil || got.Status != store.ApprovalStale {
		t.Errorf("approval %+v, %v: want stale", got, err)
	}
}
