package server_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"knit.dev/knit/internal/engine"
	"knit.dev/knit/internal/knit"
	"knit.dev/knit/internal/spec"
	"knit.dev/knit/internal/store"
	"knit.dev/knit/internal/view"
)

// TestEnvironmentHealth: the verification after an apply shows in the
// environment's view; GET …/health runs the checks again on the server
// (operators of the environment's team only) and its verdict becomes the
// one the view shows.
func TestEnvironmentHealth(t *testing.T) {
	h := newHarness(t)
	var status atomic.Int32
	status.Store(http.StatusOK)
	probe := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(int(status.Load()))
	}))
	t.Cleanup(probe.Close)

	doc := `apiVersion: knit.dev/v1
kind: Environment
spec:
  teamName: shop
  envName: live
  autoApprove: true
  components:
    - name: app
      type: script
      script: {apply: "true"}
  health:
    checks:
      - {name: web, http: {url: "` + probe.URL + `/healthz", expectStatus: 200}}
`
	env, diags := spec.Parse("env.yaml", t.TempDir(), []byte(doc))
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	res, err := knit.NewRun(h.k, knit.RunRequest{Kind: engine.KindApply, Env: env, Actor: "alice", Source: "cli"}).Run(context.Background())
	if err != nil || res.Status != store.StatusSucceeded {
		t.Fatalf("apply: %v %+v", err, res)
	}
	viewer := h.token("vera", "viewer", "shop")
	operator := h.token("olga", "operator", "shop")
	stranger := h.token("sam", "operator", "other")

	var v view.EnvironmentView
	h.do(call{method: "GET", path: "/api/v1/environments/shop/live", token: viewer}, 200).decode(t, &v)
	if v.Health == nil || v.Health.Verdict != "Successful" || v.Health.RunID != res.RunID || len(v.Health.Checks) != 1 ||
		v.Health.Checks[0] != (view.HealthCheck{Name: "web", Verdict: "Successful", Measured: 1, Evidence: "status 200", Message: v.Health.Checks[0].Message}) {
		t.Fatalf("health after the apply = %s", dumpAny(v.Health))
	}

	status.Store(http.StatusServiceUnavailable)
	var hv view.Health
	h.do(call{method: "GET", path: "/api/v1/environments/shop/live/health", token: operator}, 200).decode(t, &hv)
	if hv.Verdict != "Failed" || hv.RunID != "" || len(hv.Checks) != 1 || hv.Checks[0].Evidence != "status 503" {
		t.Fatalf("health now = %s", dumpAny(hv))
	}
	h.do(call{method: "GET", path: "/api/v1/environments/shop/live", token: viewer}, 200).decode(t, &v)
	if v.Health == nil || v.Health.Verdict != "Failed" || v.Health.Checks[0].Evidence != "status 503" || !v.Health.CheckedAt.Equal(hv.CheckedAt) {
		t.Fatalf("the view does not show the last check: %s", dumpAny(v.Health))
	}

	// Checks run commands and probes on the server: operators of the
	// team only.
	h.do(call{method: "GET", path: "/api/v1/environments/shop/live/health", token: stranger}, 403)
	h.do(call{method: "GET", path: "/api/v1/environments/shop/live/health", token: viewer}, 403)
	h.do(call{method: "GET", path: "/api/v1/environments/shop/nope/health", token: operator}, 404)
	h.do(call{method: "GET", path: "/api/v1/environments/shop/live/health", invalid: true}, 401)
	if strings.Contains(dumpAny(v), "healthz") {
		t.Fatal("the view shows the check's URL")
	}
}
