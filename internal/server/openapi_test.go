package server_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"knit.dev/knit/internal/controller/runqueue"
	"knit.dev/knit/internal/engine"
	"knit.dev/knit/internal/knit"
	"knit.dev/knit/internal/server"
	"knit.dev/knit/internal/store"
)

// TestOpenAPIDocumentDescribesEveryRoute loads and validates the document
// and checks it names exactly the routes routes.go registers.
func TestOpenAPIDocumentDescribesEveryRoute(t *testing.T) {
	doc, _ := loadDoc(t)
	src, err := os.ReadFile("routes.go")
	if err != nil {
		t.Fatal(err)
	}
	var routes []string
	for _, m := range regexp.MustCompile(`h\("([A-Z]+) (/[^"]*)"`).FindAllStringSubmatch(string(src), -1) {
		routes = append(routes, m[1]+" "+m[2])
	}
	var documented []string
	for path, item := range doc.Paths.Map() {
		for method := range item.Operations() {
			documented = append(documented, method+" "+path)
		}
	}
	sort.Strings(routes)
	sort.Strings(documented)
	if strings.Join(routes, "\n") != strings.Join(documented, "\n") {
		t.Fatalf("routes.go registers:\n  %s\nthe document describes:\n  %s",
			strings.Join(routes, "\n  "), strings.Join(documented, "\n  "))
	}
	// Probes and the webhook need no token; everything else does.
	for path, item := range doc.Paths.Map() {
		for method, op := range item.Operations() {
			open := op.Security != nil && len(*op.Security) == 0
			want := path == "/healthz" || path == "/readyz" || path == "/api/v1/webhooks/git"
			if open != want {
				t.Errorf("%s %s: needs no token = %v, want %v", method, path, open, want)
			}
		}
	}
}

// TestEveryEndpointConformsToTheDocument calls each endpoint of a real
// server for its success and every error it can return; the harness checks
// each exchange against the document.
func TestEveryEndpointConformsToTheDocument(t *testing.T) {
	h := newHarness(t)
	admin := h.token("root", "admin")
	op := h.token("ci", "operator")
	viewer := h.token("watcher", "viewer")
	payViewer := h.token("pay-watcher", "viewer", "pay")
	bogus := "knit_notatoken"
	h.seed("pay", "prod", envOpts{}, "seed")
	h.seed("ops", "web", envOpts{}, "seed")

	t.Run("probes and metrics", func(t *testing.T) {
		h := h.in(t)
		h.do(call{method: "GET", path: "/healthz"}, 200)
		h.do(call{method: "GET", path: "/readyz"}, 200)
		h.do(call{method: "GET", path: "/metrics", token: viewer}, 200)
		h.do(call{method: "GET", path: "/metrics", invalid: true}, 401)
		h.do(call{method: "GET", path: "/api/v1/openapi.yaml", token: viewer}, 200)
		h.do(call{method: "GET", path: "/api/v1/openapi.yaml", token: bogus}, 401)

		// A server that has not opened yet is not ready.
		starting, err := server.New(h.k, server.Config{Listen: "127.0.0.1:0", Queue: runqueue.New(h.k, runqueue.Config{})})
		if err != nil {
			t.Fatal(err)
		}
		hs := httptest.NewServer(starting.Handler())
		defer hs.Close()
		defer starting.Close(context.Background())
		saved := h.base
		h.base = hs.URL
		r := h.do(call{method: "GET", path: "/readyz"}, 503)
		h.base = saved
		if !strings.Contains(string(r.body), "starting") {
			t.Fatalf("readyz before Open: %s", r.body)
		}
	})

	t.Run("environments", func(t *testing.T) {
		h := h.in(t)
		var page struct {
			Items []knit.EnvironmentSummary
			Next  string
		}
		h.do(call{method: "GET", path: "/api/v1/environments?limit=1", token: viewer}, 200).decode(t, &page)
		if len(page.Items) != 1 || page.Items[0].ID != "ops/web" || page.Next == "" || page.Items[0].LastRun == nil {
			t.Fatalf("page 1: %+v", page)
		}
		cursor := page.Next
		page.Items, page.Next = nil, ""
		h.do(call{method: "GET", path: "/api/v1/environments?limit=1&cursor=" + cursor, token: viewer}, 200).decode(t, &page)
		if len(page.Items) != 1 || page.Items[0].ID != "pay/prod" || page.Next != "" {
			t.Fatalf("page 2: %+v", page)
		}
		page.Items = nil
		h.do(call{method: "GET", path: "/api/v1/environments?status=provisioned&team=pay", token: viewer}, 200).decode(t, &page)
		if len(page.Items) != 1 || page.Items[0].ID != "pay/prod" {
			t.Fatalf("team pay: %+v", page)
		}
		h.do(call{method: "GET", path: "/api/v1/environments?limit=0", token: viewer, invalid: true}, 400)
		h.do(call{method: "GET", path: "/api/v1/environments?limit=many", token: viewer, invalid: true}, 400)
		h.do(call{method: "GET", path: "/api/v1/environments", invalid: true}, 401)
		h.do(call{method: "GET", path: "/api/v1/environments?team=ops", token: payViewer}, 403)

		var env knit.EnvironmentView
		h.do(call{method: "GET", path: "/api/v1/environments/pay/prod", token: viewer}, 200).decode(t, &env)
		if env.AppliedRevision != 1 || len(env.Components) != 2 || env.Components[0].Status != "applied" {
			t.Fatalf("pay/prod: %+v", env)
		}
		h.do(call{method: "GET", path: "/api/v1/environments/pay/prod", token: bogus}, 401)
		h.do(call{method: "GET", path: "/api/v1/environments/ops/web", token: payViewer}, 403)
		h.do(call{method: "GET", path: "/api/v1/environments/pay/nope", token: viewer}, 404)
	})

	t.Run("outputs", func(t *testing.T) {
		h := h.in(t)
		var outs map[string]map[string]knit.OutputView
		h.do(call{method: "GET", path: "/api/v1/environments/pay/prod/outputs", token: viewer}, 200).decode(t, &outs)
		if outs["prod-db"]["password"].Value != knit.Masked || outs["prod-db"]["host"].Value != "db.internal" {
			t.Fatalf("masked outputs: %+v", outs)
		}
		outs = nil
		h.do(call{method: "GET", path: "/api/v1/environments/pay/prod/outputs?component=prod-db&reveal=true", token: admin}, 200).decode(t, &outs)
		if len(outs) != 1 || outs["prod-db"]["password"].Value != "pw" {
			t.Fatalf("revealed outputs: %+v", outs)
		}
		h.do(call{method: "GET", path: "/api/v1/environments/pay/prod/outputs?reveal=true", token: viewer}, 403)
		h.do(call{method: "GET", path: "/api/v1/environments/pay/prod/outputs?reveal=yes", token: admin, invalid: true}, 200)
		h.do(call{method: "GET", path: "/api/v1/environments/ops/web/outputs", token: payViewer}, 403)
		h.do(call{method: "GET", path: "/api/v1/environments/pay/prod/outputs?component=nope", token: viewer}, 404)
		h.do(call{method: "GET", path: "/api/v1/environments/pay/prod/outputs", invalid: true}, 401)
	})

	t.Run("revisions", func(t *testing.T) {
		h := h.in(t)
		var page struct{ Items []map[string]any }
		h.do(call{method: "GET", path: "/api/v1/environments/pay/prod/revisions?limit=10", token: viewer}, 200).decode(t, &page)
		if len(page.Items) != 1 || page.Items[0]["number"] != 1.0 || !strings.Contains(page.Items[0]["spec"].(string), "prod-db") {
			t.Fatalf("revisions: %+v", page)
		}
		h.do(call{method: "GET", path: "/api/v1/environments/pay/prod/revisions?limit=1001", token: viewer, invalid: true}, 400)
		h.do(call{method: "GET", path: "/api/v1/environments/pay/prod/revisions?cursor=latest", token: viewer, invalid: true}, 400)
		h.do(call{method: "GET", path: "/api/v1/environments/pay/prod/revisions", invalid: true}, 401)
		h.do(call{method: "GET", path: "/api/v1/environments/ops/web/revisions", token: payViewer}, 403)
		h.do(call{method: "GET", path: "/api/v1/environments/pay/nope/revisions", token: viewer}, 404)
	})

	t.Run("diff", func(t *testing.T) {
		h := h.in(t)
		var d struct{ Same bool }
		h.do(call{method: "GET", path: "/api/v1/environments/pay/prod/diff?a=1&b=1", token: viewer}, 200).decode(t, &d)
		if !d.Same {
			t.Errorf("a revision differs from itself: %+v", d)
		}
		h.do(call{method: "GET", path: "/api/v1/environments/pay/prod/diff?a=1", token: viewer, invalid: true}, 400)
		h.do(call{method: "GET", path: "/api/v1/environments/pay/prod/diff?a=1&b=1", invalid: true}, 401)
		h.do(call{method: "GET", path: "/api/v1/environments/ops/web/diff?a=1&b=1", token: payViewer}, 403)
		h.do(call{method: "GET", path: "/api/v1/environments/pay/prod/diff?a=1&b=9", token: viewer}, 404)
	})

	var runID string
	t.Run("runs", func(t *testing.T) {
		h := h.in(t)
		var acc struct{ RunID, Status string }
		h.do(call{method: "POST", path: "/api/v1/environments/pay/prod/runs", token: op,
			body: map[string]any{"kind": "plan", "components": []string{"prod-db"}, "reason": "look"}}, 202).decode(t, &acc)
		if acc.RunID == "" || acc.Status != "queued" {
			t.Fatalf("accepted: %+v", acc)
		}
		runID = acc.RunID
		run := h.waitRun(runID, viewer)
		if run["status"] != "succeeded" || run["kind"] != "plan" || run["actor"] != "ci" || run["reason"] != "look" || run["source"] != "api" {
			t.Fatalf("run: %+v", run)
		}
		runs := h.do(call{method: "POST", path: "/api/v1/environments/pay/prod/runs", token: op, body: map[string]any{"kind": "destroy"}, invalid: true}, 400)
		if runs.errorCode(t) != "bad_request" {
			t.Fatalf("bad kind: %s", runs.body)
		}
		h.do(call{method: "POST", path: "/api/v1/environments/pay/prod/runs", token: op, body: `{"kind":"plan","force":true}`, invalid: true}, 400)
		h.do(call{method: "POST", path: "/api/v1/environments/pay/prod/runs", token: op, invalid: true}, 400)
		h.do(call{method: "POST", path: "/api/v1/environments/pay/prod/runs", body: map[string]any{"kind": "plan"}, invalid: true}, 401)
		h.do(call{method: "POST", path: "/api/v1/environments/pay/prod/runs", token: viewer, body: map[string]any{"kind": "plan"}}, 403)
		// autoApprove says yes to a whole teardown; an apply's plans are
		// approved one by one.
		if r := h.do(call{method: "POST", path: "/api/v1/environments/pay/prod/runs", token: op, body: map[string]any{"kind": "apply", "autoApprove": true}}, 400); !strings.Contains(string(r.body), "autoApprove is for teardown runs") {
			t.Fatalf("autoApprove on an apply: %s", r.body)
		}
		h.do(call{method: "POST", path: "/api/v1/environments/pay/prod/runs", token: viewer, body: map[string]any{"kind": "teardown", "autoApprove": true}}, 403)
		h.do(call{method: "POST", path: "/api/v1/environments/pay/nope/runs", token: op, body: map[string]any{"kind": "plan"}}, 404)

		// An environment whose only revision is invalid (as a bad first
		// commit leaves it) has nothing to run.
		if _, err := knit.NewRecordInvalid(h.k, store.Environment{ID: "pay/draft", Team: "pay", Name: "draft"}, store.Revision{Env: "pay/draft", Hash: "bad", Source: "envs/draft.yaml", Spec: []byte("spec: ["),
			Errors: "envs/draft.yaml:1:7: spec: unterminated flow sequence", CreatedAt: time.Now()}, "seed").Run(context.Background()); err != nil {
			t.Fatal(err)
		}
		if c := h.do(call{method: "POST", path: "/api/v1/environments/pay/draft/runs", token: op, body: map[string]any{"kind": "apply"}}, 409).errorCode(t); c != "conflict" {
			t.Fatalf("never applied: %s", c)
		}

		var view struct {
			Components []map[string]any
		}
		h.do(call{method: "GET", path: "/api/v1/runs/" + runID, token: payViewer}, 200).decode(t, &view)
		if len(view.Components) != 1 || view.Components[0]["component"] != "prod-db" {
			t.Fatalf("component runs: %+v", view)
		}
		h.do(call{method: "GET", path: "/api/v1/runs/" + runID, invalid: true}, 401)
		if r := h.do(call{method: "GET", path: "/api/v1/runs/nope", token: viewer}, 404); strings.Count(string(r.body), "run nope") != 1 {
			t.Errorf("a missing run is named once: %s", r.body)
		}

		var history struct{ Items []map[string]any }
		h.do(call{method: "GET", path: "/api/v1/environments/pay/prod/runs?limit=1", token: viewer}, 200).decode(t, &history)
		if len(history.Items) != 1 || history.Items[0]["id"] != runID {
			t.Fatalf("history: %+v, want run %s first", history, runID)
		}
		h.do(call{method: "GET", path: "/api/v1/environments/pay/prod/runs?limit=0", token: viewer, invalid: true}, 400)
		h.do(call{method: "GET", path: "/api/v1/environments/pay/prod/runs", invalid: true}, 401)
		h.do(call{method: "GET", path: "/api/v1/environments/ops/web/runs", token: payViewer}, 403)
		h.do(call{method: "GET", path: "/api/v1/environments/pay/nope/runs", token: viewer}, 404)
		var logs map[string]any
		h.do(call{method: "GET", path: "/api/v1/environments/pay/prod/components/prod-db/logs", token: viewer}, 200).decode(t, &logs)
		if logs["runId"] != runID || logs["component"] != "prod-db" {
			t.Fatalf("logs: %+v", logs)
		}
		h.do(call{method: "GET", path: "/api/v1/environments/pay/prod/components/prod-db/logs", invalid: true}, 401)
		h.do(call{method: "GET", path: "/api/v1/environments/ops/web/components/web/logs", token: payViewer}, 403)
		h.do(call{method: "GET", path: "/api/v1/environments/pay/prod/components/nope/logs", token: viewer}, 404)

		h.do(call{method: "POST", path: "/api/v1/runs/" + runID + "/cancel", token: op}, 202)
		h.do(call{method: "POST", path: "/api/v1/runs/" + runID + "/cancel", token: bogus}, 401)
		h.do(call{method: "POST", path: "/api/v1/runs/" + runID + "/cancel", token: viewer}, 403)
		h.do(call{method: "POST", path: "/api/v1/runs/nope/cancel", token: op}, 404)

		// A run of another team is out of a team token's sight.
		var other struct{ RunID string }
		h.do(call{method: "POST", path: "/api/v1/environments/ops/web/runs", token: op, body: map[string]any{"kind": "drift"}}, 202).decode(t, &other)
		if run := h.waitRun(other.RunID, viewer); run["status"] != "succeeded" {
			t.Fatalf("drift run: %+v", run)
		}
		h.do(call{method: "GET", path: "/api/v1/runs/" + other.RunID, token: payViewer}, 403)
		h.do(call{method: "POST", path: "/api/v1/runs/" + other.RunID + "/cancel", token: h.token("pay-ci", "operator", "pay")}, 403)
		h.do(call{method: "GET", path: "/api/v1/runs/" + other.RunID + "/events", token: payViewer}, 403)

		var env knit.EnvironmentView
		h.do(call{method: "GET", path: "/api/v1/environments/ops/web", token: viewer}, 200).decode(t, &env)
		if env.LastDrift == nil || env.LastDrift.RunID != other.RunID {
			t.Fatalf("last drift: %+v", env.LastDrift)
		}
	})

	t.Run("events", func(t *testing.T) {
		h := h.in(t)
		// A finished run streams to its end at once.
		r := h.do(call{method: "GET", path: "/api/v1/runs/" + runID + "/events", token: viewer}, 200)
		var last sseEvent
		if err := readSSE(strings.NewReader(string(r.body)), func(ev sseEvent) bool { last = ev; return true }); err != nil {
			t.Fatal(err)
		}
		if last.Event != string(engine.RunFinished) {
			t.Fatalf("last event %+v", last)
		}
		h.do(call{method: "GET", path: "/api/v1/runs/" + runID + "/events", token: viewer,
			header: http.Header{"Last-Event-Id": {"-1"}}, invalid: true}, 400)
		h.do(call{method: "GET", path: "/api/v1/runs/" + runID + "/events", token: viewer,
			header: http.Header{"Last-Event-Id": {"five"}}, invalid: true}, 400)
		h.do(call{method: "GET", path: "/api/v1/runs/" + runID + "/events", invalid: true}, 401)
		h.do(call{method: "GET", path: "/api/v1/runs/nope/events", token: viewer}, 404)
	})

	t.Run("approvals", func(t *testing.T) {
		h := h.in(t)
		var page struct{ Items []map[string]any }
		h.do(call{method: "GET", path: "/api/v1/approvals", token: viewer}, 200).decode(t, &page)
		if len(page.Items) != 0 {
			t.Fatalf("pending approvals: %+v", page)
		}
		h.do(call{method: "GET", path: "/api/v1/approvals?env=pay/prod&status=all", token: payViewer}, 200)
		h.do(call{method: "GET", path: "/api/v1/approvals?status=maybe", token: viewer, invalid: true}, 200)
		h.do(call{method: "GET", path: "/api/v1/approvals", invalid: true}, 401)
		h.do(call{method: "GET", path: "/api/v1/approvals?env=ops/web", token: payViewer}, 403)
		h.do(call{method: "GET", path: "/api/v1/approvals?env=pay/nope", token: viewer}, 404)

		for _, verb := range []string{"approve", "reject"} {
			path := "/api/v1/environments/pay/prod/components/prod-app/" + verb
			body := map[string]any{"planChecksum": "abc", "reason": "ok"}
			if c := h.do(call{method: "POST", path: path, token: op, body: body}, 409).errorCode(t); c != "conflict" {
				t.Fatalf("%s with nothing waiting: %s", verb, c)
			}
			h.do(call{method: "POST", path: path, token: op, body: map[string]any{"reason": "ok"}, invalid: true}, 400)
			h.do(call{method: "POST", path: path, token: op, body: "{", invalid: true}, 400)
			h.do(call{method: "POST", path: path, body: body, invalid: true}, 401)
			h.do(call{method: "POST", path: path, token: viewer, body: body}, 403)
			h.do(call{method: "POST", path: "/api/v1/environments/pay/nope/components/x/" + verb, token: op, body: body}, 404)
			// Deciding on an environment never applied is a conflict, not a failure.
			h.do(call{method: "POST", path: "/api/v1/environments/pay/draft/components/draft-app/" + verb, token: op, body: body}, 409)
		}
	})

	t.Run("audit", func(t *testing.T) {
		h := h.in(t)
		var page struct {
			Items []map[string]any
			Next  string
		}
		h.do(call{method: "GET", path: "/api/v1/audit?limit=1", token: viewer}, 200).decode(t, &page)
		if len(page.Items) != 1 || page.Next == "" {
			t.Fatalf("audit page 1: %+v", page)
		}
		cursor := page.Next
		page.Items, page.Next = nil, ""
		h.do(call{method: "GET", path: "/api/v1/audit?actor=root&env=pay/prod&since=2000-01-01T00:00:00Z&until=2999-01-01T00:00:00Z&cursor=" + cursor, token: viewer}, 200).decode(t, &page)
		if len(page.Items) != 1 || page.Items[0]["action"] != "reveal-outputs" {
			t.Fatalf("root's audit of pay/prod: %+v", page)
		}
		// A team token sees its team's events only, never token changes.
		page.Items = nil
		h.do(call{method: "GET", path: "/api/v1/audit", token: payViewer}, 200).decode(t, &page)
		for _, e := range page.Items {
			if e["env"] != "pay/prod" && e["env"] != "pay/draft" {
				t.Fatalf("a pay token sees %+v", e)
			}
		}
		h.do(call{method: "GET", path: "/api/v1/audit?since=yesterday", token: viewer, invalid: true}, 400)
		h.do(call{method: "GET", path: "/api/v1/audit?limit=0", token: viewer, invalid: true}, 400)
		h.do(call{method: "GET", path: "/api/v1/audit?cursor=first", token: viewer, invalid: true}, 400)
		h.do(call{method: "GET", path: "/api/v1/audit", invalid: true}, 401)
		h.do(call{method: "GET", path: "/api/v1/audit?env=ops/web", token: payViewer}, 403)
		h.do(call{method: "GET", path: "/api/v1/audit?env=pay/nope", token: viewer}, 404)
	})

	t.Run("unlock", func(t *testing.T) {
		h := h.in(t)
		// A run holds pay/prod's lock while its plan is held.
		runID, _ := h.heldRun("pay/prod", "plan", "plan", "prod-db", op)
		lock := "/api/v1/environments/pay/prod/lock"
		h.do(call{method: "DELETE", path: lock, token: admin, body: "{", invalid: true}, 400)
		h.do(call{method: "DELETE", path: lock, invalid: true}, 401)
		h.do(call{method: "DELETE", path: lock, token: op}, 403)
		h.do(call{method: "DELETE", path: "/api/v1/environments/ops/web/lock", token: h.token("pay-root", "admin", "pay")}, 403)
		var out struct {
			Released struct{ RunID, Owner string }
		}
		h.do(call{method: "DELETE", path: lock, token: admin, body: map[string]any{"reason": "stuck"}}, 200).decode(t, &out)
		if out.Released.RunID != runID || out.Released.Owner != "ci" {
			t.Fatalf("released %+v, want run %s of ci", out.Released, runID)
		}
		if run := h.waitRun(runID, viewer); run["status"] != "interrupted" {
			t.Fatalf("the unlocked run: %+v", run)
		}
		h.do(call{method: "DELETE", path: lock, token: admin}, 404)
		h.do(call{method: "DELETE", path: "/api/v1/environments/pay/nope/lock", token: admin}, 404)
		var page struct{ Items []map[string]any }
		h.do(call{method: "GET", path: "/api/v1/audit?env=pay/prod&actor=root", token: viewer}, 200).decode(t, &page)
		if n := len(page.Items); n == 0 || page.Items[n-1]["action"] != "unlock" || page.Items[n-1]["reason"] != "stuck" {
			t.Fatalf("unlock not audited: %+v", page.Items)
		}
	})

	t.Run("live environments", func(t *testing.T) {
		h := h.in(t)
		var live []map[string]any
		h.do(call{method: "GET", path: "/api/v1/live-environments?team=pay", token: payViewer}, 200).decode(t, &live)
		if len(live) != 1 || live[0]["team"] != "pay" || live[0]["name"] != "prod" {
			t.Fatalf("pay's live environments: %+v (ops/web exports nothing to pay)", live)
		}
		h.do(call{method: "GET", path: "/api/v1/live-environments", token: viewer, invalid: true}, 400)
		h.do(call{method: "GET", path: "/api/v1/live-environments?team=ops", token: payViewer}, 403)
		h.do(call{method: "GET", path: "/api/v1/live-environments?team=ops", invalid: true}, 401)
	})

	t.Run("webhook", func(t *testing.T) {
		h := h.in(t)
		body := `{"ref":"refs/heads/main"}`
		// A good signature on a server without GitOps: nothing to fetch.
		h.do(call{method: "POST", path: "/api/v1/webhooks/git", body: body, header: signed(webhookSecret, body)}, 404)
		h.do(call{method: "POST", path: "/api/v1/webhooks/git", body: body, header: signed("wrong", body)}, 401)
		h.do(call{method: "POST", path: "/api/v1/webhooks/git", body: body, invalid: true}, 401)
		big := `{"pad":"` + strings.Repeat("x", 5<<20) + `"}`
		h.do(call{method: "POST", path: "/api/v1/webhooks/git", body: big, header: signed(webhookSecret, big)}, 400)
	})
}
