package e2e

import (
	"context"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// pageWaves are five environments in waves [upgrade_testing, 50%, 100%],
// one at a time.
const pageWaves = `      steps: [{selector: {matchLabels: {upgrade_testing: "true"}}}, {percent: 50}, {percent: 100}]
      maxFailed: 0
      maxParallel: 1`

// jsTrue polls a JavaScript condition in the page until it holds: the
// page's live stream patches it as the server's rollout moves.
func jsTrue(t *testing.T, ctx context.Context, what, cond string) {
	t.Helper()
	inBrowser(t, ctx, "wait for "+what, chromedp.Poll[chromedp.Void](cond, chromedp.WithPollingTimeout(3*time.Minute), chromedp.WithPollingInterval(100*time.Millisecond)))
}

// jsValue evaluates a JavaScript expression in the page.
func jsValue[T any](t *testing.T, ctx context.Context, expr string) T {
	t.Helper()
	c, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	v, err := chromedp.Run(c, chromedp.Evaluate[T](expr, chromedp.EvalAwaitPromise))
	if err != nil {
		t.Fatalf("evaluate %s: %v", expr, err)
	}
	return v
}

// axeClean runs the vendored axe-core in the page: no serious or critical violation.
func axeClean(t *testing.T, ctx context.Context, page string) {
	t.Helper()
	src, err := os.ReadFile(filepath.Join(repo, "internal", "web", "static", "vendor", "axe.min.js"))
	if err != nil {
		t.Fatal(err)
	}
	jsValue[bool](t, ctx, string(src)+";true")
	bad := jsValue[[]string](t, ctx, `axe.run(document, {resultTypes: ["violations"]}).then(r => r.violations.filter(v => v.impact === "serious" || v.impact === "critical").map(v => v.id + ": " + v.help))`)
	for _, v := range bad {
		t.Errorf("axe on %s: %s", page, v)
	}
}

// dashboardGet fetches a dashboard page with a bearer token.
func dashboardGet(t *testing.T, s *server, token, path string) (int, string) {
	t.Helper()
	req, err := http.NewRequest("GET", s.url+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// rows are the fleet page's rows as env:wave:state.
const rows = `[...document.querySelectorAll("table.fleetenvs tbody tr[data-env]")].map(tr => tr.dataset.env.slice(5) + ":" + tr.querySelector("td.wave").textContent + ":" + tr.querySelector("td.state").dataset.state).join(" ")`

// The dashboard's fleet page (issue 41 item 3) follows a real rollout in
// waves of a set's template change (GitOps over file://, real tofu held
// per environment by its wrapper): it shows the first wave applying
// alone, then the second, then the rollout done, its cells patched from
// the live stream without a reload; the label filter keeps the matching
// rows; a viewer has no buttons, another team's token sees nothing of
// the set. axe-core passes.
func TestTheDashboardFleetPageFollowsARolloutInWaves(t *testing.T) {
	t.Parallel()
	w, s, repo, _ := waveWorld(t, 5, pageWaves, 1)
	w.hold("c01")
	w.hold("c02")
	repo.commit("fleet: release 2", map[string]string{"envs/fleet.yaml": waveSet(5, "2", pageWaves, 1)})
	s.eventually("c01 applies release 2, held", func() bool { return w.heldNow("c01") })

	ctx := browser(t)
	inBrowser(t, ctx, "sign in", chromedp.Navigate(s.url+"/login?next=/fleets/shop/fleet"), chromedp.WaitVisible(chromedp.CSS("#token")),
		chromedp.SendKeys(chromedp.CSS("#token"), s.token), chromedp.Submit(chromedp.CSS("#token")),
		chromedp.WaitVisible(chromedp.CSS("table.fleetenvs")))
	jsTrue(t, ctx, "c01 applying", `document.querySelector('tr[data-env="shop/c01"] td.state[data-state="applying"]') !== null`)
	if got := jsValue[string](t, ctx, rows); got != "c01:1:applying c02:2:waiting c03:2:waiting c04:3:waiting c05:3:waiting" {
		t.Errorf("rows while wave 1 applies: %s", got)
	}
	if got := jsValue[string](t, ctx, `[...document.querySelectorAll("ol.waves > li")].map(li => li.dataset.state).join(" ")`); got != "current next next" {
		t.Errorf("waves while wave 1 applies: %s", got)
	}
	if got := jsValue[string](t, ctx, `document.querySelector("p.why").textContent`); !strings.Contains(got, "wave 1 of 3 (upgrade_testing=true): 1 applying") {
		t.Errorf("why the next wave waits: %q", got)
	}
	if n := jsValue[int](t, ctx, `document.querySelectorAll("form.fleet-abort, form.fleet-skip").length`); n != 2 {
		t.Errorf("the operator sees %d of Skip and Abort", n)
	}
	axeClean(t, ctx, "/fleets/shop/fleet")

	// A viewer: no buttons. Another team's operator: nothing of the set.
	viewer := strings.TrimSpace(w.ok("token", "create", "shop-viewer", "--role", "viewer").stdout)
	if code, page := dashboardGet(t, s, viewer, "/fleets/shop/fleet"); code != http.StatusOK || strings.Contains(page, `/fleets/shop/fleet/actions`) || !strings.Contains(page, "shop/c05") {
		t.Errorf("the viewer's page (%d) has buttons or lacks c05", code)
	}
	other := strings.TrimSpace(w.ok("token", "create", "pay-op", "--role", "operator", "--team", "pay").stdout)
	if code, page := dashboardGet(t, s, other, "/fleets/shop/fleet"); code != http.StatusNotFound || strings.Contains(page, "shop/c0") {
		t.Errorf("another team's fleet page: %d", code)
	}
	if _, page := dashboardGet(t, s, other, "/fleets"); strings.Contains(page, "shop/fleet") {
		t.Errorf("another team's fleets list names shop/fleet")
	}

	jsValue[bool](t, ctx, `window.notReloaded = true`)
	w.unhold("c01")
	s.eventually("c02 applies release 2, held", func() bool { return w.heldNow("c02") })
	jsTrue(t, ctx, "wave 2 applying c02", `document.querySelector('tr[data-env="shop/c02"] td.state[data-state="applying"]') !== null && document.querySelector('ol.waves li[data-wave="2"][data-state="current"]') !== null`)
	if got := jsValue[string](t, ctx, rows); got != "c01:1:verified c02:2:applying c03:2:waiting c04:3:waiting c05:3:waiting" {
		t.Errorf("rows while wave 2 applies: %s", got)
	}
	w.unhold("c02")
	jsTrue(t, ctx, "the rollout done", `document.querySelector('p.fleetstate[data-status="done"]') !== null`)
	if got := jsValue[string](t, ctx, rows); got != "c01:1:verified c02:2:verified c03:2:verified c04:3:verified c05:3:verified" {
		t.Errorf("rows once done: %s", got)
	}
	if !jsValue[bool](t, ctx, `window.notReloaded === true`) {
		t.Errorf("the page was reloaded, not patched from its stream")
	}
	if got := jsValue[string](t, ctx, `document.querySelector('tr[data-env="shop/c05"] td.release').textContent`); !strings.Contains(got, "revision 2") {
		t.Errorf("c05's release once done: %q", got)
	}
	if n := jsValue[int](t, ctx, `document.querySelectorAll("div.fleetactions form").length`); n != 0 {
		t.Errorf("a done rollout offers %d actions", n)
	}
	axeClean(t, ctx, "/fleets/shop/fleet (done)")

	inBrowser(t, ctx, "filter upgrade_testing=true", chromedp.SetValue(chromedp.CSS("#f-selector"), "upgrade_testing=true"),
		chromedp.Submit(chromedp.CSS("#f-selector")), chromedp.WaitVisible(chromedp.CSS("table.fleetenvs caption code")))
	if got := jsValue[string](t, ctx, rows); got != "c01:1:verified" {
		t.Errorf("rows matching upgrade_testing=true: %s", got)
	}
}
