package server_test

import (
	"context"
	"testing"
	"time"

	"knit.dev/knit/internal/spec"
	"knit.dev/knit/internal/store"
	"knit.dev/knit/internal/view"
)

// seedPipeline records pipeline web (team shop: dev, then prod, which
// needs one approval by someone other than the author) and release r-1 by
// alice (verified: a commit she signed), verified in dev an hour ago.
func (h *harness) seedPipeline() { h.seedPipelineBy(true) }

// seedPipelineBy is seedPipeline with r-1's author verified or not (the
// name an unsigned commit claims).
func (h *harness) seedPipelineBy(verified bool) {
	h.t.Helper()
	ctx := context.Background()
	p, ds := spec.ParsePipeline("web.yaml", []byte(`apiVersion: knit.dev/v1
kind: Pipeline
metadata: {name: web}
spec:
  teamName: shop
  stages:
    - {name: dev, file: dev.yaml}
    - {name: prod, file: prod.yaml, approval: {required: 1, requireOtherApprover: true}}
`))
	if ds.HasErrors() {
		h.t.Fatal(ds)
	}
	must := func(err error) {
		h.t.Helper()
		if err != nil {
			h.t.Fatal(err)
		}
	}
	must(h.k.PutPipeline(ctx, p, "c0ffee", map[string]string{"dev": "shop/dev", "prod": "shop/prod"}))
	_, _, err := h.k.AddRelease(ctx, store.Release{Pipeline: "web", ID: "r-1", Template: "t.yaml@sha256:ab", Params: []byte(`{"version":"1"}`),
		Commit: "c0ffee", Author: "alice", AuthorVerified: verified, Message: "v1"})
	must(err)
	hour := time.Now().Add(-time.Hour)
	must(h.k.SetStage(ctx, view.StageState{Pipeline: "web", Release: "r-1", Stage: "dev", State: store.StageApplying, RunID: "run-1", ChangedAt: hour}, "", "shop/dev"))
	must(h.k.SetStage(ctx, view.StageState{Pipeline: "web", Release: "r-1", Stage: "dev", State: store.StageSucceeded, RunID: "run-1", ChangedAt: hour, VerifiedAt: hour}, store.StageApplying, "shop/dev"))
}

// TestPipelines: the status says prod awaits an approval; the author's
// own is refused, another operator's makes it Ready; releases show the
// history; other teams, viewers promoting, an operator forcing, unknown
// pipelines, stages and releases are refused.
func TestPipelines(t *testing.T) {
	h := newHarness(t)
	h.seedPipeline()
	viewer, alice, bob := h.token("viewer", "viewer", "shop"), h.token("alice", "operator", "shop"), h.token("bob", "operator", "shop")
	other, admin := h.token("pay", "operator", "pay"), h.token("root", "admin")

	var p struct {
		Stages []struct {
			Name    string
			Waiting *struct{ Release, Reason string }
		}
	}
	h.do(call{method: "GET", path: "/api/v1/pipelines/web", token: viewer}, 200).decode(t, &p)
	if len(p.Stages) != 2 || p.Stages[1].Waiting == nil || p.Stages[1].Waiting.Reason != "AwaitingApproval" {
		t.Fatalf("status: %+v, want prod AwaitingApproval", p)
	}
	h.do(call{method: "GET", path: "/api/v1/pipelines/web", token: other}, 403)
	h.do(call{method: "GET", path: "/api/v1/pipelines/nope", token: viewer}, 404)
	h.do(call{method: "GET", path: "/api/v1/pipelines/web", invalid: true}, 401)

	promote := func(token, release, stage string, force bool, want int) {
		t.Helper()
		h.do(call{method: "POST", path: "/api/v1/pipelines/web/promote", token: token,
			body: map[string]any{"release": release, "stage": stage, "force": force}}, want)
	}
	promote(alice, "r-1", "prod", false, 403) // the author's own approval
	promote(viewer, "r-1", "prod", false, 403)
	promote(bob, "r-1", "prod", true, 403) // force needs an admin
	promote(bob, "r-9", "prod", false, 404)
	promote(bob, "r-1", "dev", false, 409) // releases enter the first stage from commits
	h.do(call{method: "POST", path: "/api/v1/pipelines/web/promote", token: bob, body: map[string]any{"stage": "prod"}, invalid: true}, 400)
	h.do(call{method: "POST", path: "/api/v1/pipelines/web/promote", body: map[string]any{"release": "r-1", "stage": "prod"}, invalid: true}, 401)
	var st struct {
		Waiting struct{ Reason string }
	}
	h.do(call{method: "POST", path: "/api/v1/pipelines/web/promote", token: bob, body: map[string]any{"release": "r-1", "stage": "prod"}}, 200).decode(t, &st)
	if st.Waiting.Reason != "Ready" {
		t.Fatalf("after bob's approval prod says %+v, want Ready", st)
	}
	promote(admin, "r-1", "prod", true, 200)

	var rs struct {
		Items []struct {
			ID, Author     string
			AuthorVerified bool
			History        []struct{ Stage, State string }
			Approvals      []struct{ Stage, Actor string }
		}
	}
	h.do(call{method: "GET", path: "/api/v1/pipelines/web/releases?stage=dev", token: viewer}, 200).decode(t, &rs)
	if len(rs.Items) != 1 || rs.Items[0].Author != "alice" || !rs.Items[0].AuthorVerified || len(rs.Items[0].History) != 2 || len(rs.Items[0].Approvals) != 2 || rs.Items[0].Approvals[0].Actor != "bob" {
		t.Fatalf("releases: %+v", rs)
	}
	h.do(call{method: "GET", path: "/api/v1/pipelines/web/releases?stage=prod", token: viewer}, 200).decode(t, &rs)
	if len(rs.Items) != 0 {
		t.Fatalf("releases in prod: %+v, want none", rs)
	}
	h.do(call{method: "GET", path: "/api/v1/pipelines/web/releases?stage=qa", token: viewer}, 404)
	h.do(call{method: "GET", path: "/api/v1/pipelines/web/releases", invalid: true}, 401)
}

// TestPipelineUnverifiedAuthorTakesTwoTokens: r-1 claims alice as its
// author with no verified signature: bob's approval is taken (200) and
// prod still awaits a second distinct token, the answer saying why; the
// release reads authorVerified false; alice's approval then makes it
// Ready.
func TestPipelineUnverifiedAuthorTakesTwoTokens(t *testing.T) {
	h := newHarness(t)
	h.seedPipelineBy(false)
	viewer, alice, bob := h.token("viewer", "viewer", "shop"), h.token("alice", "operator", "shop"), h.token("bob", "operator", "shop")
	var st struct {
		Waiting struct {
			Reason   string
			Approval struct {
				Required       int
				AuthorVerified *bool
			}
		}
	}
	promote := func(token string) {
		t.Helper()
		h.do(call{method: "POST", path: "/api/v1/pipelines/web/promote", token: token, body: map[string]any{"release": "r-1", "stage": "prod"}}, 200).decode(t, &st)
	}
	promote(bob)
	if w := st.Waiting; w.Reason != "AwaitingApproval" || w.Approval.Required != 2 || w.Approval.AuthorVerified == nil || *w.Approval.AuthorVerified {
		t.Fatalf("after bob's approval of the unverified release: %+v, want AwaitingApproval, 2 required, author not verified", w)
	}
	var rs struct {
		Items []map[string]any
	}
	h.do(call{method: "GET", path: "/api/v1/pipelines/web/releases", token: viewer}, 200).decode(t, &rs)
	if len(rs.Items) != 1 || rs.Items[0]["authorVerified"] != false {
		t.Fatalf("releases: %+v, want r-1 with authorVerified false", rs.Items)
	}
	promote(alice)
	if st.Waiting.Reason != "Ready" {
		t.Fatalf("after alice's approval: %+v, want Ready", st.Waiting)
	}
}

// TestPipelineRollback: an operator asks a stage to apply again the
// release it verified before its current one; the stage then applies it
// (a second ask is a conflict); unknown stages, viewers and missing
// tokens are refused.
func TestPipelineRollback(t *testing.T) {
	h := newHarness(t)
	h.seedPipeline()
	ctx := context.Background()
	_, _, err := h.k.AddRelease(ctx, store.Release{Pipeline: "web", ID: "r-2", Template: "t.yaml@sha256:ab", Params: []byte(`{"version":"2"}`),
		Commit: "beef", Author: "alice", Message: "v2"})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	if err := h.k.SetStage(ctx, view.StageState{Pipeline: "web", Release: "r-2", Stage: "dev", State: store.StageSucceeded, ChangedAt: now, VerifiedAt: now}, "", "shop/dev"); err != nil {
		t.Fatal(err)
	}
	viewer, op := h.token("viewer", "viewer", "shop"), h.token("op", "operator", "shop")
	var p struct {
		Stages []struct{ Name, RollbackTo string }
	}
	h.do(call{method: "GET", path: "/api/v1/pipelines/web", token: viewer}, 200).decode(t, &p)
	if p.Stages[0].RollbackTo != "r-1" {
		t.Fatalf("dev would roll back to %q, want r-1", p.Stages[0].RollbackTo)
	}
	rollback := func(token string, body map[string]any, want int, invalid bool) response {
		t.Helper()
		return h.do(call{method: "POST", path: "/api/v1/pipelines/web/rollback", token: token, body: body, invalid: invalid}, want)
	}
	rollback(viewer, map[string]any{"stage": "dev"}, 403, false)
	rollback(op, map[string]any{"stage": "qa"}, 404, false)
	rollback(op, map[string]any{"reason": "x"}, 400, true)
	rollback("", map[string]any{"stage": "dev"}, 401, true)
	var st struct {
		Waiting struct{ Release, Reason, Message string }
	}
	rollback(op, map[string]any{"stage": "dev", "reason": "v2 is slow"}, 200, false).decode(t, &st)
	if st.Waiting.Release != "r-1" || st.Waiting.Reason != "Applying" || st.Waiting.Message != "queued: rollback by op: v2 is slow" {
		t.Fatalf("after the rollback dev says %+v", st)
	}
	rollback(op, map[string]any{"stage": "dev"}, 409, false)
}
