package server_test

import (
	"strings"
	"testing"
)

// approvalItem is the part of an approval these tests read.
type approvalItem struct {
	ID           int64
	Env          string
	Component    string
	RunID        string
	PlanChecksum string
	Status       string
	DecidedBy    string
	Plan         struct{ Add, Change, Destroy int }
}

// waiting applies env through the API as token and returns the one plan
// that then waits for approval.
func (h *harness) waiting(env, token string) approvalItem {
	h.t.Helper()
	var acc struct{ RunID string }
	h.do(call{method: "POST", path: "/api/v1/environments/" + env + "/runs", token: token,
		body: map[string]any{"kind": "apply", "reason": "ship it"}}, 202).decode(h.t, &acc)
	if run := h.waitRun(acc.RunID, token); run["status"] != "awaiting-approval" {
		h.t.Fatalf("apply of %s: %+v", env, run)
	}
	var page struct{ Items []approvalItem }
	h.do(call{method: "GET", path: "/api/v1/approvals?env=" + env, token: token}, 200).decode(h.t, &page)
	// The plan the seed left waiting stays the one to decide: this apply
	// planned from the same inputs, so it holds that plan again.
	if len(page.Items) != 1 || page.Items[0].PlanChecksum == "" || page.Items[0].Status != "pending" {
		h.t.Fatalf("approvals of %s after run %s: %+v", env, acc.RunID, page.Items)
	}
	return page.Items[0]
}

func (h *harness) componentStatus(env, component, token string) string {
	h.t.Helper()
	var v struct {
		Components []struct{ Name, Status string }
	}
	h.do(call{method: "GET", path: "/api/v1/environments/" + env, token: token}, 200).decode(h.t, &v)
	for _, c := range v.Components {
		if c.Name == component {
			return c.Status
		}
	}
	h.t.Fatalf("%s has no component %s: %+v", env, component, v)
	return ""
}

// TestApprovalOfTheWaitingPlanApplyItOnly: an apply through the API waits
// for its gated component; a checksum that is not the waiting plan's gets
// 409 and applies nothing; the right one gets a run that applies it.
func TestApprovalOfTheWaitingPlanAppliesItOnly(t *testing.T) {
	h := newHarness(t)
	alice := h.token("alice", "operator")
	h.seed("pay", "prod", envOpts{gated: true}, "seed")

	a := h.waiting("pay/prod", alice)
	if a.Component != "prod-app" || a.Plan.Add != 1 {
		t.Fatalf("waiting: %+v", a)
	}
	approve := "/api/v1/environments/pay/prod/components/prod-app/approve"
	r := h.do(call{method: "POST", path: approve, token: alice, body: map[string]any{"planChecksum": "0" + a.PlanChecksum[1:], "reason": "lgtm"}}, 409)
	if c := r.errorCode(t); c != "stale_plan" {
		t.Fatalf("wrong checksum: %s", r.body)
	}
	if calls := applies(h, "prod-app"); calls != 0 || h.componentStatus("pay/prod", "prod-app", alice) != "awaiting-approval" {
		t.Fatalf("a refused approval applied something: %d applies", calls)
	}

	var out struct {
		Approval approvalItem
		RunID    string
	}
	h.do(call{method: "POST", path: approve, token: alice, body: map[string]any{"planChecksum": a.PlanChecksum, "reason": "lgtm"}}, 200).decode(t, &out)
	if out.RunID == "" || out.Approval.ID != a.ID || out.Approval.Status != "approved" || out.Approval.DecidedBy != "alice" {
		t.Fatalf("approve: %+v", out)
	}
	if run := h.waitRun(out.RunID, alice); run["status"] != "succeeded" || run["actor"] != "alice" {
		t.Fatalf("the apply of the approved plan: %+v", run)
	}
	if !h.runner.Applied("prod-app") || applies(h, "prod-app") != 1 || h.componentStatus("pay/prod", "prod-app", alice) != "applied" {
		t.Fatalf("prod-app not applied once: %d applies", applies(h, "prod-app"))
	}
	var page struct{ Items []approvalItem }
	h.do(call{method: "GET", path: "/api/v1/approvals?env=pay/prod&status=applied", token: alice}, 200).decode(t, &page)
	if len(page.Items) != 1 || page.Items[0].ID != a.ID {
		t.Fatalf("applied approvals: %+v", page.Items)
	}
}

func applies(h *harness, component string) int {
	n := 0
	for _, c := range h.runner.Calls("apply") {
		if c.Component == component {
			n++
		}
	}
	return n
}

// TestRejectionAppliesNothing: a rejected plan is closed and never applied.
func TestRejectionAppliesNothing(t *testing.T) {
	h := newHarness(t)
	alice := h.token("alice", "operator")
	h.seed("pay", "stage", envOpts{gated: true}, "seed")
	a := h.waiting("pay/stage", alice)
	var out map[string]any
	h.do(call{method: "POST", path: "/api/v1/environments/pay/stage/components/stage-app/reject", token: alice,
		body: map[string]any{"planChecksum": a.PlanChecksum, "reason": "not now"}}, 200).decode(t, &out)
	if out["approval"].(map[string]any)["status"] != "rejected" || out["runId"] != nil {
		t.Fatalf("reject: %+v", out)
	}
	if applies(h, "stage-app") != 0 {
		t.Fatal("a rejected plan was applied")
	}
	var page struct{ Items []approvalItem }
	h.do(call{method: "GET", path: "/api/v1/approvals?env=pay/stage", token: alice}, 200).decode(t, &page)
	if len(page.Items) != 0 {
		t.Fatalf("still pending: %+v", page.Items)
	}
}

// TestAnotherApproverIsRequiredWhenTheSpecSaysSo: with approval:
// {requireOtherApprover: true}, the author of the change (the token that
// started the run that made the plan) may not approve it; another may.
func TestAnotherApproverIsRequiredWhenTheSpecSaysSo(t *testing.T) {
	h := newHarness(t)
	alice := h.token("alice", "operator")
	bob := h.token("bob", "operator")
	h.seed("pay", "prod", envOpts{gated: true, otherApprover: true}, "alice")
	a := h.waiting("pay/prod", alice)
	approve := "/api/v1/environments/pay/prod/components/prod-app/approve"
	body := map[string]any{"planChecksum": a.PlanChecksum, "reason": "mine"}
	if c := h.do(call{method: "POST", path: approve, token: alice, body: body}, 403).errorCode(t); c != "forbidden" {
		t.Fatalf("self-approval: %s", c)
	}
	if applies(h, "prod-app") != 0 || h.componentStatus("pay/prod", "prod-app", bob) != "awaiting-approval" {
		t.Fatal("a refused self-approval applied something")
	}
	var out struct {
		Approval approvalItem
		RunID    string
	}
	h.do(call{method: "POST", path: approve, token: bob, body: map[string]any{"planChecksum": a.PlanChecksum}}, 200).decode(t, &out)
	if out.Approval.DecidedBy != "bob" {
		t.Fatalf("approve: %+v", out)
	}
	if run := h.waitRun(out.RunID, bob); run["status"] != "succeeded" {
		t.Fatalf("apply: %+v", run)
	}
	if applies(h, "prod-app") != 1 {
		t.Fatalf("%d applies of prod-app", applies(h, "prod-app"))
	}
}

// TestApprovalsComePageByPage: GET /approvals pages with limit and
// cursor like every other list, and a bad cursor is refused.
func TestApprovalsComePageByPage(t *testing.T) {
	h := newHarness(t)
	viewer := h.token("viewer", "viewer")
	h.seed("pay", "a", envOpts{gated: true}, "alice")
	h.seed("pay", "b", envOpts{gated: true}, "alice")
	h.seed("pay", "c", envOpts{gated: true}, "alice")
	var seen []string
	cursor := ""
	for range 5 {
		var p struct {
			Items []approvalItem
			Next  string
		}
		path := "/api/v1/approvals?limit=2"
		if cursor != "" {
			path += "&cursor=" + cursor
		}
		h.do(call{method: "GET", path: path, token: viewer}, 200).decode(t, &p)
		if len(p.Items) > 2 {
			t.Fatalf("a page of limit 2 holds %d", len(p.Items))
		}
		for _, a := range p.Items {
			seen = append(seen, a.Env)
		}
		if cursor = p.Next; cursor == "" {
			break
		}
	}
	if want := []string{"pay/a", "pay/b", "pay/c"}; strings.Join(seen, " ") != strings.Join(want, " ") {
		t.Errorf("pages of approvals gave %v, want %v", seen, want)
	}
	if code := h.do(call{method: "GET", path: "/api/v1/approvals?cursor=x1", token: viewer, invalid: true}, 400).errorCode(t); code == "" {
		t.Error("a bad cursor got no error code")
	}
}
