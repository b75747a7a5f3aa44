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
