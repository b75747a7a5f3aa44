package web_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"knit.dev/knit/internal/adapters"
	"knit.dev/knit/internal/knit"
	"knit.dev/knit/internal/spec"
	"knit.dev/knit/internal/store"
	"knit.dev/knit/internal/testtools"
)

// prodPolicy watches every change in an environment labelled prod and
// forbids destroying anything there.
const prodPolicy = `package knit

warn contains {"msg": "prod changes are watched", "component": c.name} if {
	input.environment.labels.tier == "prod"
	some c in input.components
	not c.destroy
}

deny contains {"msg": sprintf("%s may not be destroyed in prod", [c.name]), "component": c.name} if {
	input.environment.labels.tier == "prod"
	some c in input.components
	c.destroy
}
`

// payLive is pay/live, labelled prod: site waits for the file GO before
// its apply ends (so a person can watch the run live); cache's destroy
// writes DESTROYED.
const payLive = `apiVersion: knit.dev/v1
kind: Environment
metadata: {name: pay-live, labels: {tier: prod}}
spec:
  teamName: pay
  envName: live
  autoApprove: true
  components:
    - name: site
      type: script
      script: {apply: "while [ ! -f GO ]; do sleep 0.1; done; echo '{}'"}
    - name: cache
      type: script
      script: {apply: "echo '{}'", destroy: "touch DESTROYED"}
`

// TestDashboardShowsPolicyDecisions: a person watching a prod apply live
// sees the policy's warning as it is made; a later commit that removes a
// component from prod ends PolicyDenied, nothing is destroyed, and the
// run page, and the environment's page, show the denial with its policy
// file, rule and component.
func TestDashboardShowsPolicyDecisions(t *testing.T) {
	ctx := browser(t)
	policies := t.TempDir()
	testtools.WriteFiles(t, policies, map[string]string{"prod.rego": prodPolicy})
	file := filepath.Join(policies, "prod.rego")
	w := newWorld(t, adapters.Config{Config: knit.Config{Policies: []string{policies}}})
	dir := filepath.Join(w.dir, "pay")
	goFile, destroyed := filepath.Join(dir, "go"), filepath.Join(dir, "destroyed")
	yaml := strings.NewReplacer("GO", goFile, "DESTROYED", destroyed).Replace(payLive)
	testtools.WriteFiles(t, dir, map[string]string{"env.yaml": yaml})
	load := func() *spec.Environment {
		env, diags := spec.Load(filepath.Join(dir, "env.yaml"))
		if diags.HasErrors() {
			t.Fatal(diags)
		}
		return env
	}

	run(t, ctx, "login", chromedp.Navigate(w.url+"/"), chromedp.WaitVisible(chromedp.CSS("#token")),
		chromedp.SendKeys(chromedp.CSS("#token"), w.tokens["viewer"]), chromedp.Submit(chromedp.CSS("#token")),
		chromedp.WaitVisible(chromedp.CSS("table.envs")))

	// Live: site's apply waits for GO, so the run is still going while
	// the page shows the decisions the policy made before it.
	r, err := knit.NewRun(w.k, knit.RunRequest{Kind: "apply", Env: load(), Actor: "ann", Source: "cli", Origin: filepath.Join(dir, "env.yaml")}).Start(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	run(t, ctx, "the live run", chromedp.Navigate(w.url+"/runs/"+r.ID), chromedp.WaitVisible(chromedp.CSS("#run-status")))
	waitFor(t, ctx, "the live warnings", `document.querySelectorAll("#policy-decisions li.decision-warn").length === 2`)
	live := text(t, ctx, "section.policy")
	for _, want := range []string{"warn prod changes are watched · component site (" + file + ":3 warn)", "component cache"} {
		if !strings.Contains(live, want) {
			t.Errorf("the live policy section lacks %q:\n%s", want, live)
		}
	}
	if st := text(t, ctx, "#run-status"); !strings.Contains(st, "running") {
		t.Errorf("the run is %q while site waits; the decisions came from the record, not live", st)
	}
	checkAxe(t, ctx, "live run with policy decisions")
	if err := os.WriteFile(goFile, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	waitFor(t, ctx, "the run's end", `document.querySelector("#run-status").textContent.includes("succeeded")`)
	// A live page lists each decision once: the stream's, not the record's too.
	if n := eval[int](t, ctx, `document.querySelectorAll("#policy-decisions li").length`); n != 2 {
		t.Errorf("the live page lists %d decisions at the run's end, want 2", n)
	}

	// Deny: a commit removes cache from prod.
	testtools.WriteFiles(t, dir, map[string]string{"env.yaml": yaml[:strings.Index(yaml, "    - name: cache")]})
	res, err := knit.NewRun(w.k, knit.RunRequest{Kind: "apply", Env: load(), Actor: "ann", Source: "cli", Origin: filepath.Join(dir, "env.yaml")}).Run(context.Background())
	if err == nil || res == nil || res.Status != store.StatusFailed || res.Policy == nil || !res.Policy.Denied() {
		t.Fatalf("removing cache from prod: %v %+v", err, res)
	}
	if _, err := os.Stat(destroyed); !os.IsNotExist(err) {
		t.Fatalf("cache was destroyed despite the denial (%v)", err)
	}
	run(t, ctx, "the denied run", chromedp.Navigate(w.url+"/runs/"+res.RunID), chromedp.WaitVisible(chromedp.CSS("#run-status")))
	waitFor(t, ctx, "the denial", `!!document.querySelector("#policy-decisions li.decision-deny")`)
	deny := text(t, ctx, "#policy-decisions li.decision-deny")
	if want := "deny cache may not be destroyed in prod · component cache (" + file + ":9 deny)"; strings.Join(strings.Fields(deny), " ") != want {
		t.Errorf("the denial reads %q, want %q", deny, want)
	}
	if st := text(t, ctx, "#run-status"); !strings.Contains(st, "failed") || !strings.Contains(st, "cache may not be destroyed in prod") {
		t.Errorf("the denied run's status: %q", st)
	}
	checkAxe(t, ctx, "denied run")
	run(t, ctx, "env", chromedp.Navigate(w.url+"/env/pay/live"), chromedp.WaitVisible(chromedp.CSS("#graph[data-drawn]")))
	// The environment's page says why cache did not go, in its words.
	if page, want := text(t, ctx, "main"), "denied by policy: "+file+":9 deny: cache may not be destroyed in prod (component cache)"; !strings.Contains(page, want) {
		t.Errorf("the environment's page lacks %q:\n%s", want, page)
	}
	checkAxe(t, ctx, "environment after a denial")
}
