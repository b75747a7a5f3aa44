package web_test

import (
	"context"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"knit.dev/knit/internal/adapters"
	"knit.dev/knit/internal/knit"
	"knit.dev/knit/internal/store"
)

// TestAnInvalidRevisionIsABannerInChromium: an environment whose newest
// revision does not validate shows a banner with every error, at its
// file:line, on the list and on the graph page, and both pages still pass
// axe-core.
func TestAnInvalidRevisionIsABannerInChromium(t *testing.T) {
	ctx := browser(t)
	w := newWorld(t, adapters.Config{})
	w.apply("shop-live", map[string]string{"env.yaml": live})
	errs := "envs/live.yaml:9:7: spec.components[0].type: unsupported component type \"scirpt\"\n    hint: did you mean \"script\"?\n" +
		"envs/live.yaml:12:19: spec.components[0].dependsOn[0]: component \"nett\" does not exist"
	_, err := knit.NewRecordInvalid(w.k, store.Environment{ID: "shop/live", Team: "shop", Name: "live"}, store.Revision{Env: "shop/live", Hash: "broken", Source: "file:///repo.git@0123456789abcdef:envs/live.yaml",
		Spec: []byte("broken: ["), Commit: "0123456789abcdef", Author: "alice", Message: "typo", Errors: errs}, "alice").Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	run(t, ctx, "sign in", chromedp.Navigate(w.url+"/"), chromedp.WaitVisible(chromedp.CSS("#token")),
		chromedp.SendKeys(chromedp.CSS("#token"), w.tokens["viewer"]), chromedp.Submit(chromedp.CSS("#token")),
		chromedp.WaitVisible(chromedp.CSS("table.envs")))
	for _, page := range []struct{ name, path string }{{"list", "/"}, {"graph page", "/env/shop/live"}} {
		run(t, ctx, page.name, chromedp.Navigate(w.url+page.path), chromedp.WaitVisible(chromedp.CSS(`section.invalid[role="alert"]`)))
		banner := text(t, ctx, "section.invalid")
		for _, want := range []string{"shop/live: envs/live.yaml at commit 0123456789 does not validate", "revision 2",
			`envs/live.yaml:9:7: spec.components[0].type: unsupported component type "scirpt"`, `hint: did you mean "script"?`,
			`envs/live.yaml:12:19: spec.components[0].dependsOn[0]: component "nett" does not exist`} {
			if !strings.Contains(banner, want) {
				t.Errorf("the %s's banner lacks %q:\n%s", page.name, want, banner)
			}
		}
		checkAxe(t, ctx, "invalid "+page.name)
	}
}
