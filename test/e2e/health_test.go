package e2e

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
)

// appModule stands in for an app: its url output is where it answers,
// and its check block holds only while ok is true.
const appModule = `
variable "url" { type = string }
variable "release" { type = string }
variable "ok" {
  type    = bool
  default = true
}
resource "terraform_data" "app" { input = var.release }
output "url" { value = var.url }
check "health" {
  assert {
    condition     = var.ok
    error_message = "the app is not healthy"
  }
}
`

func appEnv(url, version, ok string) string {
	return `apiVersion: knit.dev/v1
kind: Environment
spec:
  teamName: shop
  envName: verified
  autoApprove: true
  components:
    - name: app
      type: terraform
      module: {source: ./app}
      variables:
        - {name: url, value: "` + url + `"}
        - {name: release, value: "` + version + `"}
        - {name: ok, value: ` + ok + `}
      outputs: [{name: url}]
      health:
        - name: http-ok
          http: {url: {valueFrom: app.url}, expectStatus: 200, bodyRegex: "^ok$"}
          count: 2
          interval: 10ms
`
}

// An apply succeeds only when its health checks do: an endpoint that
// fails after a change fails the run naming the check and the status it
// saw, and so does an OpenTofu check block whose assertion fails; knit
// health judges the applied environment on demand.
func TestApplyIsVerifiedByHealthChecks(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	var status atomic.Int32
	status.Store(200)
	srv := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		rw.WriteHeader(int(status.Load()))
		_, _ = rw.Write([]byte("ok"))
	}))
	defer srv.Close()
	w.write(map[string]string{"app/main.tf": appModule, "env.yaml": appEnv(srv.URL+"/healthz", "1", "true")})

	w.ok("apply", "-f", "env.yaml")
	r := w.ok("health", "shop/verified")
	if !strings.Contains(r.stdout, "app/http-ok") || !strings.Contains(r.stdout, "health: Successful") {
		t.Errorf("knit health:\n%s", r.stdout)
	}

	// The endpoint fails: the next change's apply fails its verification.
	status.Store(503)
	w.write(map[string]string{"env.yaml": appEnv(srv.URL+"/healthz", "2", "true")})
	r = w.knit("apply", "-f", "env.yaml")
	const want = "verification Failed: health check app/http-ok: failed (1) > failureLimit (0): status 503, want 200"
	if r.code != 1 || !strings.Contains(r.stderr, want) {
		t.Fatalf("apply against a failing endpoint: exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	if h := w.knit("history", "shop/verified"); !strings.Contains(h.stdout, "failed") {
		t.Errorf("history:\n%s", h.stdout)
	}
	if r := w.knit("health", "shop/verified"); r.code != 1 || !strings.Contains(r.stdout, "status 503") {
		t.Errorf("knit health of a failing endpoint: exit %d\n%s", r.code, r.stdout)
	}

	// The endpoint recovers, but the module's own check block fails.
	status.Store(200)
	w.write(map[string]string{"env.yaml": appEnv(srv.URL+"/healthz", "3", "false")})
	r = w.knit("apply", "-f", "env.yaml")
	if r.code != 1 || !strings.Contains(r.stderr, "health check app/check.health: the app is not healthy") {
		t.Fatalf("apply with a failing check block: exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
}
