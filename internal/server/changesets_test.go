package server_test

import (
	"strings"
	"testing"
)

// changeSetItem is the part of a change set these tests read.
type changeSetItem struct {
	ID         int64
	Env        string
	Checksum   string
	Status     string
	DecidedBy  string
	Components []struct {
		Component  string
		ApprovalID int64
	}
}

// pendingChangeSet returns env's one waiting change set.
func (h *harness) pendingChangeSet(env, token string) changeSetItem {
	h.t.Helper()
	var page struct{ Items []changeSetItem }
	h.do(call{method: "GET", path: "/api/v1/change-sets?env=" + env, token: token}, 200).decode(h.t, &page)
	if len(page.Items) != 1 || page.Items[0].Status != "pending" || len(page.Items[0].Checksum) != 64 {
		h.t.Fatalf("change sets of %s: %+v", env, page.Items)
	}
	return page.Items[0]
}

// TestAChangeSetIsDecidedOnceThroughTheAPI: a gated apply's change set is
// listed with its checksum; deciding it needs that checksum (400 without,
// 409 for another), a token of the environment's team (403 otherwise) and
// a known environment (404). Approved, it queues the apply that applies
// the waiting plan; rejected, it applies nothing.
func TestAChangeSetIsDecidedOnceThroughTheAPI(t *testing.T) {
	h := newHarness(t)
	alice := h.token("alice", "operator")
	ops := h.token("ops-operator", "operator", "ops")
	opsViewer := h.token("ops-viewer", "viewer", "ops")
	h.seed("pay", "prod", envOpts{gated: true}, "seed")
	h.seed("pay", "stage", envOpts{gated: true}, "seed")
	cs := h.pendingChangeSet("pay/prod", alice)
	if len(cs.Components) != 1 || cs.Components[0].Component != "prod-app" || cs.Components[0].ApprovalID == 0 {
		t.Fatalf("change set of pay/prod: %+v", cs)
	}

	h.do(call{method: "GET", path: "/api/v1/change-sets?limit=0", token: alice, invalid: true}, 400)
	h.do(call{method: "GET", path: "/api/v1/change-sets", invalid: true}, 401)
	h.do(call{method: "GET", path: "/api/v1/change-sets?env=pay/prod", token: opsViewer}, 403)
	h.do(call{method: "GET", path: "/api/v1/change-sets?env=pay/nope", token: alice}, 404)
	var all struct{ Items []changeSetItem }
	h.do(call{method: "GET", path: "/api/v1/change-sets", token: opsViewer}, 200).decode(t, &all)
	if len(all.Items) != 0 {
		t.Fatalf("a token of team ops sees pay's change sets: %+v", all.Items)
	}

	for _, verb := range []string{"approve", "reject"} {
		path := "/api/v1/environments/pay/prod/change-set/" + verb
		h.do(call{method: "POST", path: path, token: alice, body: map[string]any{"reason": "no checksum"}, invalid: true}, 400)
		h.do(call{method: "POST", path: path, body: map[string]any{"checksum": cs.Checksum}, invalid: true}, 401)
		if c := h.do(call{method: "POST", path: path, token: ops, body: map[string]any{"checksum": cs.Checksum}}, 403).errorCode(t); c != "forbidden" {
			t.Fatalf("%s by another team: %s", verb, c)
		}
		h.do(call{method: "POST", path: "/api/v1/environments/pay/nope/change-set/" + verb, token: alice, body: map[string]any{"checksum": cs.Checksum}}, 404)
		other := strings.Repeat("0", 64)
		if c := h.do(call{method: "POST", path: path, token: alice, body: map[string]any{"checksum": other}}, 409).errorCode(t); c != "stale_plan" {
			t.Fatalf("%s of another change set: %s", verb, c)
		}
	}
	if applies(h, "prod-app") != 0 || h.componentStatus("pay/prod", "prod-app", alice) != "awaiting-approval" {
		t.Fatal("a refused decision applied something")
	}

	var out struct {
		ChangeSet changeSetItem
		RunID     string
	}
	h.do(call{method: "POST", path: "/api/v1/environments/pay/prod/change-set/approve", token: alice,
		body: map[string]any{"checksum": cs.Checksum[:12], "reason": "lgtm"}}, 200).decode(t, &out)
	if out.RunID == "" || out.ChangeSet.ID != cs.ID || out.ChangeSet.Status != "approved" || out.ChangeSet.DecidedBy != "alice" {
		t.Fatalf("approve: %+v", out)
	}
	if run := h.waitRun(out.RunID, alice); run["status"] != "succeeded" {
		t.Fatalf("the apply of the approved change set: %+v", run)
	}
	if applies(h, "prod-app") != 1 || h.componentStatus("pay/prod", "prod-app", alice) != "applied" {
		t.Fatalf("prod-app not applied once: %d applies", applies(h, "prod-app"))
	}

	st := h.pendingChangeSet("pay/stage", alice)
	var rej struct {
		ChangeSet changeSetItem
		RunID     string
	}
	h.do(call{method: "POST", path: "/api/v1/environments/pay/stage/change-set/reject", token: alice,
		body: map[string]any{"checksum": st.Checksum, "reason": "not now"}}, 200).decode(t, &rej)
	if rej.ChangeSet.Status != "rejected" || rej.RunID != "" || applies(h, "stage-app") != 0 {
		t.Fatalf("reject: %+v, %d applies", rej, applies(h, "stage-app"))
	}
	var page struct{ Items []approvalItem }
	h.do(call{method: "GET", path: "/api/v1/approvals?env=pay/stage&status=rejected", token: alice}, 200).decode(t, &page)
	if len(page.Items) != 1 || page.Items[0].Component != "stage-app" {
		t.Fatalf("the rejected change set's plan is not rejected: %+v", page.Items)
	}
}

// TestTheAuthorCannotApproveTheirOwnChangeSet: with approval:
// {requireOtherApprover: true}, the change set's author (the actor of the
// run that stopped) gets 403, and another operator may approve it.
func TestTheAuthorCannotApproveTheirOwnChangeSet(t *testing.T) {
	h := newHarness(t)
	alice := h.token("alice", "operator")
	bob := h.token("bob", "operator")
	h.seed("pay", "prod", envOpts{gated: true, otherApprover: true}, "alice")
	cs := h.pendingChangeSet("pay/prod", alice)
	approve := "/api/v1/environments/pay/prod/change-set/approve"
	if c := h.do(call{method: "POST", path: approve, token: alice, body: map[string]any{"checksum": cs.Checksum}}, 403).errorCode(t); c != "forbidden" {
		t.Fatalf("self-approval of a change set: %s", c)
	}
	if applies(h, "prod-app") != 0 {
		t.Fatal("a refused self-approval applied something")
	}
	var out struct{ RunID string }
	h.do(call{method: "POST", path: approve, token: bob, body: map[string]any{"checksum": cs.Checksum}}, 200).decode(t, &out)
	if run := h.waitRun(out.RunID, bob); run["status"] != "succeeded" || applies(h, "prod-app") != 1 {
		t.Fatalf("bob's approval: %+v, %d applies", run, applies(h, "prod-app"))
	}
}
