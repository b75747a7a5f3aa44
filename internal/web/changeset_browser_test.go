package web_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"knit.dev/knit/internal/adapters"
	"knit.dev/knit/internal/knit"
	"knit.dev/knit/internal/store"
	"knit.dev/knit/internal/testtools"
)

// dataModule outputs its input, which a plan already knows, so what
// depends on it is planned before it is applied.
const dataModule = `
variable "name" { type = string }
resource "terraform_data" "this" {
  input = var.name
}
output "name" { value = terraform_data.this.input }
`

// fiveGated is five gated OpenTofu components in four levels:
// net ← (db, cache) ← app ← web.
const fiveGated = `apiVersion: knit.dev/v1
kind: Environment
metadata: {name: shop-five}
spec:
  teamName: shop
  envName: five
  autoApprove: false
  components:
    - name: net
      type: terraform
      module: {source: ./modules/data}
      outputs: [{name: name}]
      variables: [{name: name, value: net}]
    - name: db
      type: terraform
      module: {source: ./modules/data}
      outputs: [{name: name}]
      dependsOn: [net]
      variables: [{name: name, valueFrom: net.name}]
    - name: cache
      type: terraform
      module: {source: ./modules/data}
      outputs: [{name: name}]
      dependsOn: [net]
      variables: [{name: name, valueFrom: net.name}]
    - name: app
      type: terraform
      module: {source: ./modules/data}
      outputs: [{name: name}]
      dependsOn: [db, cache]
      variables: [{name: name, valueFrom: db.name}]
    - name: web
      type: terraform
      module: {source: ./modules/data}
      dependsOn: [app]
      variables: [{name: name, valueFrom: app.name}]
`

// TestOneClickApprovesTheWholeChange: a new gated environment of five
// OpenTofu components in four levels stops once; its page shows the whole
// change set (every component's plan, under one checksum) with an Approve
// button, and one click applies all five, with nothing left to approve.
func TestOneClickApprovesTheWholeChange(t *testing.T) {
	ctx := browser(t)
	w := newWorld(t, adapters.Config{Tools: adapters.Tools{TFBinary: testtools.Tofu(t).Path}})
	w.apply("shop-five", map[string]string{"env.yaml": fiveGated, "modules/data/main.tf": dataModule})
	sets, err := knit.NewRecords(w.k).ChangeSets(context.Background(), "shop/five", 0, store.ChangeSetPending)
	if err != nil || len(sets) != 1 || len(sets[0].Components) != 5 {
		t.Fatalf("change sets of shop/five: %+v, %v", sets, err)
	}
	sum := sets[0].Checksum

	run(t, ctx, "login", chromedp.Navigate(w.url+"/"), chromedp.WaitVisible(chromedp.CSS("#token")),
		chromedp.SendKeys(chromedp.CSS("#token"), w.tokens["operator"]), chromedp.Submit(chromedp.CSS("#token")),
		chromedp.WaitVisible(chromedp.CSS("table.envs")))
	run(t, ctx, "environment", chromedp.Navigate(w.url+"/env/shop/five"), chromedp.WaitVisible(chromedp.CSS("form.decide-change")))
	body := text(t, ctx, "section.changeset")
	for _, want := range []string{sum, "net", "db", "cache", "app", "web", "terraform_data.this"} {
		if !strings.Contains(body, want) {
			t.Errorf("the change set on the page lacks %q:\n%s", want, body)
		}
	}
	if got := eval[string](t, ctx, `document.querySelector('form.decide-change input[name=change]').value`); got != sum {
		t.Fatalf("the form's checksum is %q, want %q", got, sum)
	}
	checkAxe(t, ctx, "environment with a change set")
	run(t, ctx, "approve the change set", chromedp.SendKeys(chromedp.CSS("form.decide-change input[name=reason]"), "one review"),
		chromedp.Click(chromedp.CSS(`form.decide-change button[value=approve]`)))
	// The click leaves the page for the environment's, with the flash.
	pollAcross(t, ctx, "the approval's page", `location.search.includes("flash=approved") && !!document.querySelector("#graph")`)
	// The apply takes as long as OpenTofu takes: the deadline only guards
	// against a hang.
	pollAcross(t, ctx, "all five applied", `(() => { const s = `+nodeStates+`; return ["net","db","cache","app","web"].every(n => s[n] === "applied"); })()`)
	v, err := knit.NewRecords(w.k).Environment(context.Background(), "shop/five")
	if err != nil || v.Status != "provisioned" {
		t.Fatalf("shop/five after one click: %s, %v", v.Status, err)
	}
	pending, err := knit.NewRecords(w.k).Approvals(context.Background(), "shop/five", store.ApprovalPending)
	if err != nil || len(pending) != 0 {
		t.Fatalf("still waiting after the change set's approval: %+v, %v", pending, err)
	}

	// The run that stopped at the gate ends superseded, linking the apply.
	runs, err := knit.NewRecords(w.k).History(context.Background(), "shop/five", "", 10)
	if err != nil || len(runs.Items) != 2 {
		t.Fatalf("runs of shop/five: %+v, %v", runs.Items, err)
	}
	first, second := runs.Items[1], runs.Items[0]
	run(t, ctx, "the first run", chromedp.Navigate(w.url+"/runs/"+first.ID), chromedp.WaitVisible(chromedp.CSS("p.superseded")))
	if href := eval[string](t, ctx, `document.querySelector('p.superseded a').getAttribute('href')`); href != "/runs/"+second.ID {
		t.Errorf("the superseded run links %q, want the apply %s", href, second.ID)
	}
}

// pollAcross polls a JavaScript condition until it holds, for as long as
// an apply may take, going on when a navigation or a live refresh
// replaces the page under a poll (Chromium then ends the poll with an
// error): the deadline only guards against a hang.
func pollAcross(t *testing.T, ctx context.Context, what, cond string) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Minute)
	var err error
	for time.Now().Before(deadline) {
		c, cancel := context.WithTimeout(ctx, 30*time.Second)
		_, err = chromedp.Run(c, chromedp.Poll[chromedp.Void](cond, chromedp.WithPollingInterval(200*time.Millisecond)))
		cancel()
		if err == nil {
			return
		}
		if ctx.Err() != nil {
			break
		}
	}
	t.Fatalf("%s: %v; graph %v", what, err, graphStates(t, ctx))
}
