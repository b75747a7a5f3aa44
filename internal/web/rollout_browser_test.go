package web_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"knit.dev/knit/internal/adapters"
	"knit.dev/knit/internal/knit"
	"knit.dev/knit/internal/spec"
	"knit.dev/knit/internal/testtools"
)

// rolloutEnv is shop/ro at version: app (the canary) behind router,
// rolled out by 10 → pause → 50 → analysis.
func rolloutEnv(version string) string {
	return `apiVersion: knit.dev/v1
kind: Environment
spec:
  teamName: shop
  envName: ro
  autoApprove: true
  rollout:
    strategy:
      canary:
        traffic: {component: router, weightInput: canary_weight}
        steps:
          - setWeight: 10
          - pause: {}
          - setWeight: 50
          - analysis: [{name: errors-low, command: "true"}]
  components:
    - name: app
      type: script
      canary: true
      script: {apply: "echo '{\"url\": \"http://app/` + version + `\"}'"}
      outputs: [{name: url}]
    - name: router
      type: script
      script: {apply: "echo '{}'"}
      variables:
        - {name: canary_weight, value: 0}
        - {name: stable, valueFrom: app.url}
        - {name: canary, valueFrom: app-canary.url}
`
}

// carryOn runs req and the rollout runs that follow it through the
// library until the rollout pauses or ends, as knit apply does in the
// foreground.
func carryOn(t testing.TB, k *knit.Knit, req *knit.RunRequest) {
	t.Helper()
	ctx := context.Background()
	for req != nil {
		res, err := knit.NewRun(k, *req).Run(ctx)
		if err != nil {
			t.Fatal(err)
		}
		a, err := knit.NewRollouts(k).Next(ctx, *req, res)
		if err != nil {
			t.Fatal(err)
		}
		req = a.Run
	}
}

// rollTo applies shop/ro at version from its folder, carrying a rollout
// on up to its pause.
func (w *world) rollTo(version string) {
	w.t.Helper()
	dir := filepath.Join(w.dir, "envs", "ro")
	testtools.WriteFiles(w.t, dir, map[string]string{"env.yaml": rolloutEnv(version)})
	env, diags := spec.Load(filepath.Join(dir, "env.yaml"))
	if diags.HasErrors() {
		w.t.Fatal(diags)
	}
	carryOn(w.t, w.k, &knit.RunRequest{Kind: "apply", Env: env, Actor: "test", Source: "test", Origin: filepath.Join(dir, "env.yaml")})
}

// The environment's page shows its rollout as a step bar: the steps, the
// one it is at, the weight and what each run found. When the rollout
// moves on (a person promotes it past its pause), the bar moves on the
// open page, live, to its end.
func TestEnvironmentPageShowsTheRolloutStepBarLive(t *testing.T) {
	ctx := browser(t)
	w := newWorld(t, adapters.Config{})
	w.rollTo("1")
	w.rollTo("2") // up to the pause
	ro := knit.NewRollouts(w.k)

	run(t, ctx, "login", chromedp.Navigate(w.url+"/"), chromedp.WaitVisible(chromedp.CSS("#token")),
		chromedp.SendKeys(chromedp.CSS("#token"), w.tokens["viewer"]), chromedp.Submit(chromedp.CSS("#token")),
		chromedp.WaitVisible(chromedp.CSS("table.envs")))
	run(t, ctx, "environment", chromedp.Navigate(w.url+"/env/shop/ro"), chromedp.WaitVisible(chromedp.CSS("section.rollout")))
	bar := `[...document.querySelectorAll("section.rollout .stepbar li")].map(li => li.dataset.state + " " + li.textContent.trim()).join(" | ")`
	if got, want := eval[string](t, ctx, bar), "done 1 weight 10 | current 2 pause until promoted | todo 3 weight 50 | todo 4 analysis (1 checks)"; got != want {
		t.Errorf("the step bar while paused:\n%s\nwant:\n%s", got, want)
	}
	line := text(t, ctx, "section.rollout")
	for _, want := range []string{"paused", "step 2 of 4", "weight 10%", "knit rollout promote shop/ro", "step 1 at weight 10: succeeded"} {
		if !strings.Contains(line, want) {
			t.Errorf("the rollout section lacks %q:\n%s", want, line)
		}
	}
	if cur := eval[string](t, ctx, `document.querySelector("section.rollout .stepbar li[aria-current=step]").dataset.state`); cur != "current" {
		t.Errorf("the current step is not marked for assistive technology: %q", cur)
	}
	checkAxe(t, ctx, "environment with a paused rollout")
	screenshot(t, ctx, "environment-rollout", "section.rollout")

	// A person promotes it: the open page follows the bar to its end.
	a, err := ro.Promote(context.Background(), "shop/ro", "alice", "looks good")
	if err != nil {
		t.Fatal(err)
	}
	carryOn(t, w.k, a.Run)
	waitFor(t, ctx, "the bar at its end", `document.querySelector('section.rollout[data-state="succeeded"]') !== null`)
	if got, want := eval[string](t, ctx, bar), "done 1 weight 10 | done 2 pause until promoted | done 3 weight 50 | done 4 analysis (1 checks)"; got != want {
		t.Errorf("the step bar at the end:\n%s\nwant:\n%s", got, want)
	}
	line = text(t, ctx, "section.rollout")
	for _, want := range []string{"all 4 steps done", "weight 0%", "step 4 at weight 50: succeeded verification Successful (1 checks)"} {
		if !strings.Contains(line, want) {
			t.Errorf("the rollout section at the end lacks %q:\n%s", want, line)
		}
	}
	checkAxe(t, ctx, "environment with a finished rollout")
}
