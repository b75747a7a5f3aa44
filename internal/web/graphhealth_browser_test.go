package web_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/chromedp/chromedp"

	"knit.dev/knit/internal/adapters"
)

// The environment's graph shows each component's health: a node's verdict
// in its colour, its checks and what they saw on hover, and the
// environment's own health above the graph. A new health check redraws it
// live. A check URL with credentials (a sensitive output) shows nowhere.
func TestGraphShowsHealth(t *testing.T) {
	ctx := browser(t)
	var status atomic.Int32
	status.Store(http.StatusServiceUnavailable)
	probe := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(int(status.Load()))
	}))
	t.Cleanup(probe.Close)
	secretURL := strings.Replace(probe.URL, "http://", "http://knit:s3cret-pass-77@", 1) + "/healthz"
	w := newWorld(t, adapters.Config{})
	w.apply("hg", map[string]string{"env.yaml": `apiVersion: knit.dev/v1
kind: Environment
spec:
  teamName: shop
  envName: hg
  autoApprove: true
  components:
    - name: db
      type: script
      script: {apply: "echo '{\"url\": \"` + secretURL + `\"}'"}
      outputs: [{name: url, sensitive: true}]
    - name: api
      type: script
      dependsOn: [db]
      script: {apply: "echo '{}'"}
      health:
        - {name: up, http: {url: {valueFrom: db.url}}}
        - {name: files, command: "true"}
    - name: web
      type: script
      dependsOn: [api]
      script: {apply: "echo '{}'"}
      health:
        - {name: ok, command: "true"}
  health:
    checks:
      - {name: smoke, command: "true"}
`})
	run(t, ctx, "login", chromedp.Navigate(w.url+"/"), chromedp.WaitVisible(chromedp.CSS("#token")),
		chromedp.SendKeys(chromedp.CSS("#token"), w.tokens["viewer"]), chromedp.Submit(chromedp.CSS("#token")),
		chromedp.WaitVisible(chromedp.CSS("table.envs")))
	run(t, ctx, "environment", chromedp.Navigate(w.url+"/env/shop/hg"), chromedp.WaitVisible(chromedp.CSS("#graph[data-drawn]")))

	healths := `Object.fromEntries([...document.querySelectorAll("#graph a.node")].map(a => [a.dataset.name, a.dataset.health || ""]))`
	wantStates(t, eval[map[string]string](t, ctx, healths), map[string]string{"db": "", "api": "Failed", "web": "Successful"})
	hover := eval[string](t, ctx, `document.querySelector('#graph a.node[data-name="api"] g.health title').textContent`)
	if want := "health Failed: up Failed (status 503) — failed (1) > failureLimit (0); files Successful"; !strings.HasPrefix(hover, want) {
		t.Errorf("api's health on hover: %q, want %q…", hover, want)
	}
	if cls := eval[string](t, ctx, `document.querySelector('#graph a.node[data-name="api"] g.health').getAttribute("class")`); cls != "health tone-bad" {
		t.Errorf("api's health colour: %q", cls)
	}
	if line := eval[string](t, ctx, `document.querySelector('#graph a.node[data-name="web"] .healthtext').textContent`); line != "health Successful" {
		t.Errorf("web's health line: %q", line)
	}
	envHealth := text(t, ctx, "p.graphhealth")
	for _, want := range []string{"Environment health Failed", "smoke Successful"} {
		if !strings.Contains(envHealth, want) {
			t.Errorf("environment health above the graph lacks %q: %q", want, envHealth)
		}
	}
	if list := text(t, ctx, `#n-api .nodehealth`); !strings.Contains(list, "up: Failed (status 503)") {
		t.Errorf("api in the component list: %q", list)
	}
	checkAxe(t, ctx, "environment with health")
	html := eval[string](t, ctx, `document.documentElement.outerHTML`)
	if strings.Contains(html, "s3cret-pass-77") || strings.Contains(html, probe.URL[len("http://"):]) {
		t.Error("the page shows the check's secret URL")
	}

	screenshot(t, ctx, "environment-health", "#graph[data-drawn]")

	// The endpoint recovers; a health check on demand turns the node green live.
	status.Store(http.StatusOK)
	if _, err := w.k.Health(context.Background(), "shop/hg"); err != nil {
		t.Fatal(err)
	}
	waitFor(t, ctx, "api healthy on the graph", `document.querySelector('#graph a.node[data-name="api"][data-health="Successful"]') !== null`)
	if v := eval[string](t, ctx, `document.querySelector("p.graphhealth").dataset.verdict`); v != "Successful" {
		t.Errorf("environment health after recovery: %q", v)
	}
}
