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
	"knit.dev/knit/internal/store"
	"knit.dev/knit/internal/testtools"
)

// TestPreviewsPageListsABranchsPreviewsOfTheTeamsEnvironments: the
// Previews page shows, for the branch typed, each environment's change
// per component with its counts and the plan's checksum, passes axe, and
// shows a team-limited token only its team's environments.

// fakeRunners runs previews unsandboxed: fake runners run no code.
var fakeRunners = knit.PreviewPolicy{Unsandboxed: true}

func TestPreviewsPageListsABranchsPreviewsOfTheTeamsEnvironments(t *testing.T) {
	ctx := browser(t)
	w := newWorld(t, adapters.Config{})
	w.apply("shop-prod", map[string]string{"env.yaml": stage("prod", "3", "pw", "")})
	w.apply("pay-prod", map[string]string{"env.yaml": strings.Replace(stage("prod", "1", "pw", ""), "teamName: shop", "teamName: pay", 1)})
	const commit = "0123456789abcdef0123456789abcdef01234567"
	for _, name := range []string{"shop-prod", "pay-prod"} {
		dir := filepath.Join(t.TempDir(), name)
		doc := stage("prod", "5", "pw", "")
		if name == "pay-prod" {
			doc = strings.Replace(doc, "teamName: shop", "teamName: pay", 1)
		}
		testtools.WriteFiles(t, dir, map[string]string{"env.yaml": doc})
		env, diags := spec.Load(filepath.Join(dir, "env.yaml"))
		if diags.HasErrors() {
			t.Fatal(diags)
		}
		p, err := knit.NewPreview(w.k, knit.PreviewRequest{Policy: fakeRunners, Branch: "feature/bigger", Commit: commit,
			Change: store.PreviewUpdate, Env: env, Actor: "ada"}).Run(context.Background())
		if err != nil || p.Status != store.PreviewPlanned {
			t.Fatalf("preview of %s: %+v, %v", name, p, err)
		}
	}
	secret, _, err := knit.NewCreateToken(w.k, "shop-1", "viewer", []string{"shop"}, "test").Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	run(t, ctx, "login", chromedp.Navigate(w.url+"/previews"), chromedp.WaitVisible(chromedp.CSS("#token")),
		chromedp.SendKeys(chromedp.CSS("#token"), secret), chromedp.Submit(chromedp.CSS("#token")),
		chromedp.WaitVisible(chromedp.CSS("form.previewform")))
	checkAxe(t, ctx, "previews (empty)")
	run(t, ctx, "type the branch", chromedp.SetValue(chromedp.CSS("#p-branch"), "feature/bigger"),
		chromedp.Click(chromedp.CSS("form.previewform button")), chromedp.WaitVisible(chromedp.CSS("section.preview")))
	body := text(t, ctx, "main")
	for _, want := range []string{"shop/prod: update at 0123456789, planned", "web", "~1 +0 -0", "plan checksum"} {
		if !strings.Contains(body, want) {
			t.Errorf("the page lacks %q:\n%s", want, body)
		}
	}
	if strings.Contains(body, "pay/prod") {
		t.Errorf("a shop token sees pay's preview:\n%s", body)
	}
	checkAxe(t, ctx, "previews (a branch)")
	screenshot(t, ctx, "previews", "main")
}
