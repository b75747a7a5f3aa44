package web_test

import (
	"context"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"knit.dev/knit/internal/adapters"
	"knit.dev/knit/internal/knit"
	"knit.dev/knit/internal/spec"
	"knit.dev/knit/internal/testtools"
)

// TestDashboardKeepsTimesApartFromCommitsAndHidesEmptyLogs: in Chromium,
// a run's time and its commit read as two words on the environment page
// ("3m ago · 01234567", never "3m ago01234567"), and a run whose component
// was up to date shows no empty log box for it.
func TestDashboardKeepsTimesApartFromCommitsAndHidesEmptyLogs(t *testing.T) {
	ctx := browser(t)
	w := newWorld(t, adapters.Config{})
	dir := filepath.Join(w.dir, "ops")
	testtools.WriteFiles(t, dir, map[string]string{"env.yaml": opsWeb})
	env, diags := spec.Load(filepath.Join(dir, "env.yaml"))
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	const sha = "0123456789abcdef0123456789abcdef01234567"
	var last string
	for range 2 { // the second run finds site up to date
		res, err := knit.NewRun(w.k, knit.RunRequest{Kind: "apply", Env: env, Actor: "ann", Source: "git", Root: dir,
			Origin: "file:///srv/git/infra@" + sha + ":env.yaml", Commit: sha, Author: "ann", Message: "site: first page"}).Run(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		last = res.RunID
	}
	signIn(t, ctx, w, "viewer", "/env/ops/web", "ul.runs")
	runs := eval[string](t, ctx, `document.querySelector("ul.runs").innerText`)
	if regexp.MustCompile(`ago\S`).MatchString(runs) || !strings.Contains(runs, "01234567") {
		t.Errorf("the runs list glues times to commits:\n%s", runs)
	}
	run(t, ctx, "run page", chromedp.Navigate(w.url+"/runs/"+last), chromedp.WaitVisible(chromedp.CSS("#c-site")))
	if st := text(t, ctx, "#st-site"); st != "up to date" {
		t.Fatalf("site's status on the second run: %q", st)
	}
	if n := eval[int](t, ctx, `[...document.querySelectorAll("pre.log")].filter(p => p.offsetParent !== null).length`); n != 0 {
		t.Errorf("%d empty log boxes are shown for an up-to-date component", n)
	}
}

// TestDashboardPipelineCardsShowEveryGate: in Chromium, a stage's card
// lists its gates with " · " between them and none before the first: its
// approvals and its windows (a prod with one approval and a window
// showed "· 1 approval" alone).
func TestDashboardPipelineCardsShowEveryGate(t *testing.T) {
	ctx := browser(t)
	w := newWorld(t, adapters.Config{})
	p, ds := spec.ParsePipeline("web.yaml", []byte(`apiVersion: knit.dev/v1
kind: Pipeline
metadata: {name: web}
spec:
  teamName: shop
  stages:
    - {name: dev, file: dev.yaml, soak: 1h}
    - name: prod
      file: prod.yaml
      approval: {required: 1}
      windows:
        allow: [{schedule: "0 9 * * 1-5", duration: 8h}]
        deny: [{schedule: "0 12 * * *", duration: 1h}]
`))
	if ds.HasErrors() {
		t.Fatal(ds)
	}
	if err := w.k.PutPipeline(context.Background(), p, "c0ffee", map[string]string{"dev": "shop/dev", "prod": "shop/prod"}); err != nil {
		t.Fatal(err)
	}
	signIn(t, ctx, w, "viewer", "/pipelines/web", "ol.stages")
	if got := text(t, ctx, `li[data-stage="dev"] .rules`); got != "soak 1h" {
		t.Errorf("dev's gates: %q", got)
	}
	want := `1 approval · open "0 9 * * 1-5" for 8h UTC · closed "0 12 * * *" for 1h UTC`
	if got := text(t, ctx, `li[data-stage="prod"] .rules`); got != want {
		t.Errorf("prod's gates: %q, want %q", got, want)
	}
}
