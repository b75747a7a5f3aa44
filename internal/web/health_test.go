package web_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"regexp"
	"sync/atomic"
	"testing"

	"knit.dev/knit/internal/adapters"
)

// TestEnvironmentPageShowsHealth: the environment page shows the last
// health check, the verification of an apply and then one on demand,
// each check with its verdict and what it saw.
func TestEnvironmentPageShowsHealth(t *testing.T) {
	var status atomic.Int32
	status.Store(http.StatusServiceUnavailable)
	probe := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(int(status.Load()))
	}))
	t.Cleanup(probe.Close)
	w := newWorld(t, adapters.Config{})
	w.apply("live", map[string]string{"env.yaml": `apiVersion: knit.dev/v1
kind: Environment
spec:
  teamName: shop
  envName: live
  autoApprove: true
  components:
    - name: app
      type: script
      script: {apply: "echo '{}'"}
      health:
        - {name: up, http: {url: "` + probe.URL + `/healthz", expectStatus: 200}}
`})
	c := w.client("viewer")
	code, body := get(t, c, w.url+"/env/shop/live")
	if code != http.StatusOK {
		t.Fatalf("GET /env/shop/live: %d\n%s", code, body)
	}
	want := regexp.MustCompile(`(?s)Health <span class="badge tone-bad">Failed</span>.*after run <a href="/runs/[^"]+">.*<li data-verdict="Failed">app/up <span class="badge tone-bad">Failed</span> <span class="evidence">status 503</span>`)
	if !want.MatchString(body) {
		t.Fatalf("the page does not show the failed verification:\n%s", body)
	}

	status.Store(http.StatusOK)
	if _, err := w.k.Health(context.Background(), "shop/live"); err != nil {
		t.Fatal(err)
	}
	_, body = get(t, c, w.url+"/env/shop/live")
	want = regexp.MustCompile(`(?s)Health <span class="badge tone-ok">Successful</span>.*<li data-verdict="Successful">app/up <span class="badge tone-ok">Successful</span> <span class="evidence">status 200</span>`)
	if !want.MatchString(body) {
		t.Fatalf("the page does not show the last health check:\n%s", body)
	}
}
