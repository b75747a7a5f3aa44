package server_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"knit.dev/knit/internal/knit"
)

// TestEveryMutatingEndpointRefusesWhoMayNotCallIt: no token, a malformed
// or revoked one get 401; a viewer, and an operator of another team, 403;
// and none of them changes anything.
func TestEveryMutatingEndpointRefusesWhoMayNotCallIt(t *testing.T) {
	h := newHarness(t)
	op := h.token("ci", "operator")
	viewer := h.token("watcher", "viewer")
	otherOp := h.token("other-ci", "operator", "other")
	otherAdmin := h.token("other-root", "admin", "other")
	revoked := h.token("gone", "admin")
	if err := knit.NewRevokeToken(h.k, "gone", "test").Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	h.seed("pay", "prod", envOpts{gated: true}, "seed")
	a := h.waiting("pay/prod", op)
	// A held run keeps the lock taken, so unlocking has something to do.
	runID, _ := h.heldRun("pay/prod", "plan", "plan", "prod-db", op)
	state := func() string {
		var v struct {
			Lock       *struct{ RunID string }
			Components []struct{ Name, Status string }
		}
		h.do(call{method: "GET", path: "/api/v1/environments/pay/prod", token: viewer}, 200).decode(t, &v)
		var runs, approvals struct{ Items []map[string]any }
		h.do(call{method: "GET", path: "/api/v1/audit?env=pay/prod", token: viewer}, 200).decode(t, &runs)
		h.do(call{method: "GET", path: "/api/v1/approvals?env=pay/prod&status=all", token: viewer}, 200).decode(t, &approvals)
		if v.Lock == nil || v.Lock.RunID != runID {
			t.Fatalf("lock %+v, want run %s's", v.Lock, runID)
		}
		return dumpAny(v) + dumpAny(runs) + dumpAny(approvals)
	}
	before := state()

	decision := map[string]any{"planChecksum": a.PlanChecksum, "reason": "r"}
	endpoints := []struct {
		name         string
		method, path string
		body         any
	}{
		{"run", "POST", "/api/v1/environments/pay/prod/runs", map[string]any{"kind": "apply"}},
		{"approve", "POST", "/api/v1/environments/pay/prod/components/prod-app/approve", decision},
		{"reject", "POST", "/api/v1/environments/pay/prod/components/prod-app/reject", decision},
		{"cancel", "POST", "/api/v1/runs/" + runID + "/cancel", nil},
		{"unlock", "DELETE", "/api/v1/environments/pay/prod/lock", map[string]any{"reason": "r"}},
	}
	for _, e := range endpoints {
		t.Run(e.name, func(t *testing.T) {
			h := h.in(t)
			c := call{method: e.method, path: e.path, body: e.body, invalid: true}
			if code := h.do(c, 401).errorCode(t); code != "unauthenticated" {
				t.Fatalf("no token: %s", code)
			}
			c.invalid = false
			for name, tok := range map[string]string{"malformed": "not-a-knit-token", "unknown": "knit_aaaa", "revoked": revoked} {
				c.token = tok
				if code := h.do(c, 401).errorCode(t); code != "unauthenticated" {
					t.Fatalf("%s token: %s", name, code)
				}
			}
			for name, tok := range map[string]string{"viewer": viewer, "another team's operator": otherOp, "another team's admin": otherAdmin} {
				c.token = tok
				if code := h.do(c, 403).errorCode(t); code != "forbidden" {
					t.Fatalf("%s: %s", name, code)
				}
			}
		})
	}
	if after := state(); after != before {
		t.Fatalf("refused calls changed something:\nbefore %s\nafter  %s", before, after)
	}
	if applies(h, "prod-app") != 0 {
		t.Fatal("a refused call applied prod-app")
	}
}

// TestReadsShowATeamTokenItsTeamsOnly: a team-scoped viewer lists its
// teams' environments, approvals and audit events only, and gets 403 for
// another team's environment.
func TestReadsShowATeamTokenItsTeamsOnly(t *testing.T) {
	h := newHarness(t)
	pay := h.token("pay-watcher", "viewer", "pay")
	payOps := h.token("pay-ops-watcher", "viewer", "pay", "ops")
	for _, env := range [][2]string{{"dev", "sandbox"}, {"ops", "web"}, {"pay", "prod"}, {"pay", "stage"}} {
		h.seed(env[0], env[1], envOpts{gated: true}, "seed")
	}
	ids := func(token, query string) []string {
		var page struct{ Items []struct{ ID string } }
		h.do(call{method: "GET", path: "/api/v1/environments" + query, token: token}, 200).decode(t, &page)
		var out []string
		for _, e := range page.Items {
			out = append(out, e.ID)
		}
		return out
	}
	if got := dumpAny(ids(pay, "")); got != `["pay/prod","pay/stage"]` {
		t.Fatalf("a pay token lists %s", got)
	}
	if got := dumpAny(ids(payOps, "")); got != `["ops/web","pay/prod","pay/stage"]` {
		t.Fatalf("a pay+ops token lists %s", got)
	}
	// Paging a multi-team token skips what it may not see.
	if got := dumpAny(ids(payOps, "?limit=1")); got != `["ops/web"]` {
		t.Fatalf("a pay+ops token's first page %s", got)
	}
	h.do(call{method: "GET", path: "/api/v1/environments?team=dev", token: pay}, 403)
	for _, p := range []string{"", "/outputs", "/revisions"} {
		h.do(call{method: "GET", path: "/api/v1/environments/ops/web" + p, token: pay}, 403)
		h.do(call{method: "GET", path: "/api/v1/environments/pay/prod" + p, token: pay}, 200)
	}
	var approvals struct{ Items []approvalItem }
	h.do(call{method: "GET", path: "/api/v1/approvals", token: pay}, 200).decode(t, &approvals)
	if len(approvals.Items) != 2 {
		t.Fatalf("a pay token sees approvals %+v", approvals.Items)
	}
	for _, a := range approvals.Items {
		if a.Env != "pay/prod" && a.Env != "pay/stage" {
			t.Fatalf("a pay token sees %+v", a)
		}
	}
	var audit struct{ Items []struct{ Env string } }
	h.do(call{method: "GET", path: "/api/v1/audit", token: pay}, 200).decode(t, &audit)
	if len(audit.Items) == 0 {
		t.Fatal("a pay token sees no audit event")
	}
	for _, e := range audit.Items {
		if e.Env != "pay/prod" && e.Env != "pay/stage" {
			t.Fatalf("a pay token sees audit events of %q", e.Env)
		}
	}
}

// TestWebhookRefusesABadSignatureAndChangesNothing.
func TestWebhookRefusesABadSignatureAndChangesNothing(t *testing.T) {
	h := newHarness(t)
	viewer := h.token("watcher", "viewer")
	h.seed("pay", "prod", envOpts{}, "seed")
	snapshot := func() string {
		var envs, audit any
		h.do(call{method: "GET", path: "/api/v1/environments", token: viewer}, 200).decode(t, &envs)
		h.do(call{method: "GET", path: "/api/v1/audit", token: viewer}, 200).decode(t, &audit)
		return dumpAny(envs) + dumpAny(audit)
	}
	before := snapshot()
	body := `{"ref":"refs/heads/main","after":"0123"}`
	for name, hdr := range map[string]http.Header{
		"missing":        nil,
		"wrong key":      signed("not-the-secret", body),
		"not hex":        {"X-Hub-Signature-256": {"sha256=zz"}},
		"another scheme": {"X-Hub-Signature": {"sha1=0123"}},
	} {
		// Only a well-formed signature under another key is a request the
		// document allows.
		malformed := name != "wrong key"
		r := h.do(call{method: "POST", path: "/api/v1/webhooks/git", body: body, header: hdr, invalid: malformed}, 401)
		if code := r.errorCode(t); code != "unauthenticated" {
			t.Fatalf("%s signature: %s", name, code)
		}
		// A webhook has no token: the message speaks of its signature only.
		if msg := string(r.body); !strings.Contains(msg, "bad or missing X-Hub-Signature-256") || strings.Contains(msg, "token") {
			t.Fatalf("%s signature: %s", name, msg)
		}
	}
	if after := snapshot(); after != before {
		t.Fatalf("a refused webhook changed something:\nbefore %s\nafter  %s", before, after)
	}
}
