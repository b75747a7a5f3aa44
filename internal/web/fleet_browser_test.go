package web_test

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"knit.dev/knit/internal/adapters"
	"knit.dev/knit/internal/fleet"
	"knit.dev/knit/internal/knit"
	"knit.dev/knit/internal/spec"
	"knit.dev/knit/internal/view"
)

// fleetEnv is one small environment of team shop.
func fleetEnv(name string) string {
	return fmt.Sprintf(`apiVersion: knit.dev/v1
kind: Environment
metadata: {name: shop-%s}
spec:
  teamName: shop
  envName: %s
  autoApprove: true
  components:
    - name: app
      type: script
      script: {apply: "echo '{}'"}
`, name, name)
}

// rollout is a set's rollout in waves as the GitOps reconciler keeps it:
// the tests move it with internal/fleet's rules and write it as the
// reconciler does.
type rollout struct {
	t       *testing.T
	w       *world
	r       *view.WaveRollout
	version int64
}

// put writes the rollout over the version last read.
func (ro *rollout) put() {
	ro.t.Helper()
	ctx := context.Background()
	if err := ro.w.k.State().PutWaveRollout(ctx, ro.r, ro.version, nil); err != nil {
		ro.t.Fatal(err)
	}
	_, v, err := ro.w.k.State().WaveRollout(ctx, ro.r.Set)
	if err != nil {
		ro.t.Fatal(err)
	}
	ro.version = v
}

// step starts what the rules start now (as runs run-ID), then writes.
func (ro *rollout) step() []string {
	ro.t.Helper()
	start, _ := fleet.Next(ro.r, time.Now())
	for _, id := range start {
		fleet.Started(ro.r, id, "run-"+id, time.Now())
	}
	ro.put()
	return start
}

// newFleet applies shop/f1..f5 (f1 labelled upgrade_testing) and records
// set shop/fleet's rollout in waves [upgrade_testing=true, 50%, 100%],
// maxFailed 0, as the reconciler would at a template change.
func newFleet(t *testing.T, w *world) *rollout {
	t.Helper()
	var members []spec.WaveMember
	for i := 1; i <= 5; i++ {
		name := fmt.Sprintf("f%d", i)
		w.apply("shop-"+name, map[string]string{"env.yaml": fleetEnv(name)})
		labels := map[string]string{"ring": "main", "region": "eu"}
		if i == 1 {
			labels = map[string]string{"ring": "canary", "upgrade_testing": "true"}
		}
		members = append(members, spec.WaveMember{ID: "shop/" + name, Labels: labels})
	}
	sel, err := spec.ParseSelector("upgrade_testing=true")
	if err != nil {
		t.Fatal(err)
	}
	waves := &spec.SetWaves{Steps: []spec.WaveStep{{Selector: sel}, {Percent: 50}, {Percent: 100}}}
	ro := &rollout{t: t, w: w, r: fleet.New("shop/fleet", "shop", "sets/fleet.yaml", "c0ffee1234567", "template changed", waves, members, time.Now())}
	ro.put()
	return ro
}

// TestFleetPageShowsTheWavesAsTheyMove (issue 41 item 3): the fleet page
// lists the set's environments with their wave, state, release and
// health, and the waves with why the next waits; as the rollout moves its
// cells change in place from the live stream (the page is not reloaded);
// a failure halts it and an operator's Retry goes through the library
// (audited); the label filter keeps the matching rows; a viewer has no
// buttons; another team's token sees nothing of the set. axe-core passes.
func TestFleetPageShowsTheWavesAsTheyMove(t *testing.T) {
	ctx := browser(t)
	w := newWorld(t, adapters.Config{})
	ro := newFleet(t, w)

	// A viewer sees the fleet, without buttons; the list links it.
	code, body := get(t, w.client("viewer"), w.url+"/fleets/shop/fleet")
	if code != http.StatusOK || strings.Contains(body, `action="/fleets/shop/fleet/actions"`) || !strings.Contains(body, "shop/f5") {
		t.Fatalf("the viewer's fleet page (%d) has buttons or lacks f5:\n%s", code, body)
	}
	if _, body := get(t, w.client("viewer"), w.url+"/fleets"); !strings.Contains(body, `href="/fleets/shop/fleet"`) {
		t.Fatalf("the fleets list lacks shop/fleet:\n%s", body)
	}
	// Another team's operator: nothing of the set, in the list, the page, its stream or its actions.
	secret, _, err := knit.NewCreateToken(w.k, "pay-1", "operator", []string{"pay"}, "test").Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	w.tokens["pay"] = secret
	pay := w.client("pay")
	if _, body := get(t, pay, w.url+"/fleets"); strings.Contains(body, "shop/fleet") {
		t.Errorf("another team's fleets list names shop/fleet:\n%s", body)
	}
	for _, path := range []string{"/fleets/shop/fleet", "/fleets/shop/fleet/live", "/fleets/shop/fleet?selector=ring%3Dmain"} {
		if code, body := get(t, pay, w.url+path); code != http.StatusNotFound || strings.Contains(body, "shop/f1") {
			t.Errorf("another team's %s: %d, want 404 naming no environment:\n%s", path, code, body)
		}
	}
	_, home := get(t, pay, w.url+"/")
	csrf := csrfField.FindStringSubmatch(home)
	if csrf == nil {
		t.Fatal("no csrf field on pay's home page")
	}
	resp, err := pay.PostForm(w.url+"/fleets/shop/fleet/actions", url.Values{"csrf": {csrf[1]}, "action": {"abort"}})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if r, _, err := w.k.State().WaveRollout(context.Background(), "shop/fleet"); err != nil || resp.StatusCode != http.StatusNotFound || r.Status != view.FleetRolling {
		t.Fatalf("another team's abort: %d, the rollout is %v (%v)", resp.StatusCode, r, err)
	}

	signIn(t, ctx, w, "operator", "/fleets/shop/fleet", "table.fleetenvs")
	eval[bool](t, ctx, `window.notReloaded = true`)
	if n := eval[int](t, ctx, `document.querySelectorAll("table.fleetenvs tbody tr[data-env]").length`); n != 5 {
		t.Fatalf("%d rows, want 5", n)
	}
	waves := eval[[]string](t, ctx, `[...document.querySelectorAll("ol.waves > li")].map(li => li.dataset.wave + ":" + li.dataset.state)`)
	if strings.Join(waves, " ") != "1:current 2:next 3:next" {
		t.Errorf("waves: %v", waves)
	}
	if row := text(t, ctx, `tr[data-env="shop/f3"]`); !strings.Contains(row, "revision 1") || !strings.Contains(row, "waiting") || !strings.Contains(row, "region=eu") {
		t.Errorf("f3's row lacks its release, state or labels: %s", row)
	}
	checkAxe(t, ctx, "/fleets/shop/fleet")

	// Wave 1: f1 alone.
	if got := ro.step(); strings.Join(got, ",") != "shop/f1" {
		t.Fatalf("wave 1 started %v", got)
	}
	waitFor(t, ctx, "f1 applying", `document.querySelector('tr[data-env="shop/f1"] td.state').dataset.state === "applying"`)
	if got := text(t, ctx, "p.why"); !strings.Contains(got, "wave 1 of 3 (upgrade_testing=true): 1 applying") {
		t.Errorf("why the next wave waits: %q", got)
	}
	fleet.Ended(ro.r, "shop/f1", true, "", time.Now())
	if got := ro.step(); strings.Join(got, ",") != "shop/f2,shop/f3" {
		t.Fatalf("wave 2 started %v", got)
	}
	waitFor(t, ctx, "wave 2 current", `document.querySelector('ol.waves li[data-wave="2"]').dataset.state === "current"`)
	cells := eval[[]string](t, ctx, `[...document.querySelectorAll("table.fleetenvs tbody tr")].map(tr => tr.dataset.env + ":" + tr.querySelector("td.wave").textContent + ":" + tr.querySelector("td.state").dataset.state)`)
	if got := strings.Join(cells, " "); got != "shop/f1:1:verified shop/f2:2:applying shop/f3:2:applying shop/f4:3:waiting shop/f5:3:waiting" {
		t.Errorf("cells after wave 2 started: %s", got)
	}
	if n := eval[int](t, ctx, `document.querySelectorAll("form.fleet-resume").length`); n != 0 {
		t.Errorf("a rolling rollout offers Resume")
	}
	// f2 fails: more than maxFailed 0, the rollout halts.
	fleet.Ended(ro.r, "shop/f2", false, "health check web failed", time.Now())
	ro.put()
	waitFor(t, ctx, "halted", `document.querySelector("p.fleetstate").dataset.status === "halted"`)
	if got := text(t, ctx, "p.why"); !strings.Contains(got, "halted: 1 environments failed") {
		t.Errorf("why it halted: %q", got)
	}
	if got := text(t, ctx, `tr[data-env="shop/f2"] td.message`); got != "health check web failed" {
		t.Errorf("f2's message: %q", got)
	}
	if !eval[bool](t, ctx, `window.notReloaded === true`) {
		t.Errorf("the page was reloaded, not patched")
	}
	checkAxe(t, ctx, "/fleets/shop/fleet (halted)")

	run(t, ctx, "retry", chromedp.Click(chromedp.CSS(`form.fleet-retry button`)),
		chromedp.WaitVisible(chromedp.CSS(`tr[data-env="shop/f2"] td.state[data-state="waiting"]`)))
	if flash := text(t, ctx, "p.flash"); !strings.Contains(flash, "retry of shop/fleet recorded") {
		t.Errorf("flash: %q", flash)
	}
	if got := text(t, ctx, "p.fleetstate"); !strings.Contains(got, "rolling") {
		t.Errorf("after the retry: %q", got)
	}
	audit, err := knit.NewRecords(w.k).Audit(context.Background(), knit.AuditFilter{Actor: "operator-1"})
	if err != nil || len(audit.Items) == 0 || audit.Items[len(audit.Items)-1].Action != "fleet-retry" {
		t.Errorf("the retry is not audited: %v %v", audit.Items, err)
	}

	// The label filter keeps the matching rows.
	run(t, ctx, "filter ring=main", chromedp.SetValue(chromedp.CSS("#f-selector"), "ring=main"), chromedp.Submit(chromedp.CSS("#f-selector")),
		chromedp.WaitVisible(chromedp.CSS(`table.fleetenvs caption code`)))
	rows := eval[[]string](t, ctx, `[...document.querySelectorAll("table.fleetenvs tbody tr[data-env]")].map(tr => tr.dataset.env)`)
	if strings.Join(rows, " ") != "shop/f2 shop/f3 shop/f4 shop/f5" {
		t.Errorf("rows matching ring=main: %v", rows)
	}
	checkAxe(t, ctx, "/fleets/shop/fleet?selector=ring=main")
	if code, body := get(t, w.client("viewer"), w.url+"/fleets/shop/fleet?selector="+url.QueryEscape("ring")); code != http.StatusBadRequest || !strings.Contains(body, "ring") {
		t.Errorf("a bad selector: %d\n%s", code, body)
	}
	if _, body := get(t, w.client("viewer"), w.url+"/fleets/shop/fleet?selector="+url.QueryEscape(`ring=<b>x</b>`)); strings.Contains(body, "<b>x</b>") {
		t.Errorf("the selector is not escaped:\n%s", body)
	}
}
