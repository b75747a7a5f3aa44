package server_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"knit.dev/knit/internal/engine"
	"knit.dev/knit/internal/knit"
	"knit.dev/knit/internal/spec"
	"knit.dev/knit/internal/store"
)

// Rollouts through the API: a paused rollout is accepted by an operator of
// the environment's team only, once; a rollback run is queued by kind, to a
// revision or the last good one, and refused at once (409) when there is
// nothing to go back to.
func TestRolloutThroughTheAPI(t *testing.T) {
	h := newHarness(t)
	var mu sync.Mutex
	broken := map[string]bool{}
	probe := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		if broken[r.URL.Query().Get("release")] {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
	}))
	t.Cleanup(probe.Close)
	apply := func(release string) *engine.Result {
		t.Helper()
		doc := `apiVersion: knit.dev/v1
kind: Environment
spec:
  teamName: shop
  envName: live
  autoApprove: true
  rollout: {onFailure: pause}
  components:
    - name: app
      type: script
      script: {apply: "true"}
      variables: [{name: release, value: "` + release + `"}]
  health:
    checks:
      - {name: web, http: {url: "` + probe.URL + `/healthz?release=` + release + `"}}
`
		env, diags := spec.Parse("env.yaml", t.TempDir(), []byte(doc))
		if diags.HasErrors() {
			t.Fatal(diags)
		}
		res, _ := knit.NewRun(h.k, knit.RunRequest{Kind: engine.KindApply, Env: env, Actor: "alice", Source: "cli"}).Run(context.Background())
		return res
	}
	operator := h.token("olga", "operator", "shop")
	viewer := h.token("vera", "viewer", "shop")
	stranger := h.token("sam", "operator", "other")

	mu.Lock()
	broken["1"] = true
	mu.Unlock()
	if res := apply("1"); res.Rollout != engine.RolloutPaused {
		t.Fatalf("first apply: %s, rollout %q", res.Status, res.Rollout)
	}
	// Nothing to go back to: 409, and nothing is queued.
	var fail map[string]map[string]string
	h.do(call{method: "POST", path: "/api/v1/environments/shop/live/runs", token: operator, body: map[string]any{"kind": "rollback"}}, 409).decode(t, &fail)
	if msg := fail["error"]["message"]; !strings.Contains(msg, "no revision of shop/live before revision 1 passed verification") {
		t.Errorf("rollback without a good revision: %q", msg)
	}
	h.do(call{method: "POST", path: "/api/v1/environments/shop/live/runs", token: operator, body: map[string]any{"kind": "apply", "to": 1}}, 400)

	// Accepting: operators of the team, once.
	h.do(call{method: "POST", path: "/api/v1/environments/shop/live/rollout/accept", token: viewer, body: map[string]string{}}, 403)
	h.do(call{method: "POST", path: "/api/v1/environments/shop/live/rollout/accept", token: stranger, body: map[string]string{}}, 403)
	var accepted map[string]any
	h.do(call{method: "POST", path: "/api/v1/environments/shop/live/rollout/accept", token: operator, body: map[string]string{"reason": "known flake"}}, 200).decode(t, &accepted)
	if accepted["status"] != string(store.EnvApplied) || accepted["revision"] != 1.0 {
		t.Errorf("accepted: %v", accepted)
	}
	h.do(call{method: "POST", path: "/api/v1/environments/shop/live/rollout/accept", token: operator, body: map[string]string{}}, 409)
	h.do(call{method: "POST", path: "/api/v1/environments/shop/live/rollout/accept", token: operator, body: map[string]string{"why": "typo"}, invalid: true}, 400)
	h.do(call{method: "POST", path: "/api/v1/environments/shop/nope/rollout/accept", token: operator, body: map[string]string{}}, 404)
	h.do(call{method: "POST", path: "/api/v1/environments/shop/live/rollout/accept", body: map[string]string{}, invalid: true}, 401)

	// Release 2 breaks; a rollback run goes back to the accepted 1.
	mu.Lock()
	broken["1"], broken["2"] = false, true
	mu.Unlock()
	if res := apply("2"); res.Rollout != engine.RolloutPaused {
		t.Fatalf("second apply: %s, rollout %q", res.Status, res.Rollout)
	}
	h.do(call{method: "POST", path: "/api/v1/environments/shop/live/runs", token: viewer, body: map[string]any{"kind": "rollback"}}, 403)
	var queued map[string]string
	h.do(call{method: "POST", path: "/api/v1/environments/shop/live/runs", token: operator, body: map[string]any{"kind": "rollback", "reason": "release 2 is broken"}}, 202).decode(t, &queued)
	run := h.waitRun(queued["runId"], operator)
	if run["kind"] != "rollback" || run["status"] != "succeeded" || run["actor"] != "olga" || run["reason"] != "release 2 is broken" {
		t.Errorf("the rollback run: %v", run)
	}
	var revs struct {
		Items []store.Revision `json:"items"`
	}
	h.do(call{method: "GET", path: "/api/v1/environments/shop/live/revisions", token: viewer}, 200).decode(t, &revs)
	got := map[int]string{}
	for _, r := range revs.Items {
		got[r.Number] = r.Verification
	}
	if got[1] != store.VerificationAccepted || got[2] != store.VerificationFailed || got[3] != store.VerificationSuccessful {
		t.Errorf("revisions' verifications: %v", got)
	}
	h.do(call{method: "POST", path: "/api/v1/environments/shop/live/runs", token: operator, body: map[string]any{"kind": "rollback", "to": 9}}, 404)
}
