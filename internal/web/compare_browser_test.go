package web_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"knit.dev/knit/internal/adapters"
	"knit.dev/knit/internal/knit"
)

// stage is one stage of a shop on script components: the stages differ
// in a variable, a password (masked), protection, and one component.
func stage(name, replicas, password, extra string) string {
	return strings.NewReplacer("NAME", name, "REPLICAS", replicas, "PASSWORD", password, "EXTRA", extra).Replace(`apiVersion: knit.dev/v1
kind: Environment
metadata: {name: NAME}
spec:
  teamName: shop
  envName: NAME
  autoApprove: true
  components:
    - name: web
      type: script
      variables:
        - {name: replicas, value: REPLICAS}
        - {name: db_password, value: PASSWORD}
      script: {apply: "echo '{\"url\":\"http://NAME\"}'"}
      outputs: [{name: url}]
EXTRA`)
}

// TestComparePagePicksTwoEnvironmentsAndShowsTheDiff: the Compare page
// lists the environments the token sees, shows what making prod look like
// staging would change (A → B) with the password masked on both sides and
// live outputs side by side, passes axe, and refuses another team's token
// alike whether the environment exists or not.
func TestComparePagePicksTwoEnvironmentsAndShowsTheDiff(t *testing.T) {
	ctx := browser(t)
	w := newWorld(t, adapters.Config{})
	w.apply("shop-prod", map[string]string{"env.yaml": stage("prod", "3", "prod-Hunter2-pw", "")})
	w.apply("shop-staging", map[string]string{"env.yaml": stage("staging", "1", "staging-Hunter2-pw",
		"    - {name: cache, type: script, script: {apply: \"echo '{}'\"}}\n")})

	run(t, ctx, "login", chromedp.Navigate(w.url+"/compare"), chromedp.WaitVisible(chromedp.CSS("#token")),
		chromedp.SendKeys(chromedp.CSS("#token"), w.tokens["viewer"]), chromedp.Submit(chromedp.CSS("#token")),
		chromedp.WaitVisible(chromedp.CSS("form.compare")))
	checkAxe(t, ctx, "compare (empty)")
	run(t, ctx, "pick prod and staging", chromedp.SetValue(chromedp.CSS("#c-a"), "shop/prod"),
		chromedp.SetValue(chromedp.CSS("#c-b"), "shop/staging"), chromedp.Click(chromedp.CSS("form.compare button")),
		chromedp.WaitVisible(chromedp.CSS("section.envdiff")))
	body := text(t, ctx, "section.envdiff")
	for _, want := range []string{"Making shop/prod (revision 1, applied) look like shop/staging (revision 1, applied)",
		"~ component web", "variables.replicas", "+ component cache", "only in shop/staging: would be added", `"http://prod"`, `"http://staging"`} {
		if !strings.Contains(body, want) {
			t.Errorf("the diff lacks %q:\n%s", want, body)
		}
	}
	// The password row: masked on both sides.
	row := eval[[]string](t, ctx, `[...document.querySelectorAll("table.fields tr")].filter(tr => tr.textContent.includes("db_password")).flatMap(tr => [...tr.querySelectorAll("td")].map(td => td.textContent))`)
	if strings.Join(row, "|") != "(sensitive)|(sensitive)" {
		t.Errorf("db_password row %q, want (sensitive) on both sides", row)
	}
	if html := eval[string](t, ctx, `document.documentElement.outerHTML`); strings.Contains(html, "Hunter2") {
		t.Fatal("a password reached the page")
	}
	checkAxe(t, ctx, "compare (a diff)")
	screenshot(t, ctx, "compare", "section.envdiff")

	// A token of another team sees neither in the list, and a diff of
	// shop's environments is refused in the same words, existing or not.
	if _, _, err := knit.NewCreateToken(w.k, "pay-1", "viewer", []string{"pay"}, "test").Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	secret, _, err := knit.NewCreateToken(w.k, "pay-2", "viewer", []string{"pay"}, "test").Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	w.tokens["pay"] = secret
	pay := w.client("pay")
	code, page := get(t, pay, w.url+"/compare")
	if code != http.StatusOK || strings.Contains(page, "shop/prod") {
		t.Errorf("another team's compare page (%d) lists shop's environments", code)
	}
	codeA, exists := get(t, pay, w.url+"/compare?a=shop/prod&b=shop/staging")
	codeB, ghost := get(t, pay, w.url+"/compare?a=shop/ghost&b=shop/staging")
	if codeA != http.StatusForbidden || codeB != codeA || strings.Replace(ghost, "ghost", "prod", -1) != exists ||
		strings.Contains(exists, "Hunter2") || strings.Contains(exists, "replicas") {
		t.Errorf("another team's diff: %d / %d, pages differ or leak", codeA, codeB)
	}
}

// TestComparePageRefusesMetadataNamesAndForeignEnvironmentsAlike: the page
// takes team/env only (a metadata name another team chose must not tell a
// refusal from an unknown name), and a team token's refusal reads the same
// for an existing and a missing environment.
func TestComparePageRefusesMetadataNamesAndForeignEnvironmentsAlike(t *testing.T) {
	w := newWorld(t, adapters.Config{})
	w.apply("shop-prod", map[string]string{"env.yaml": stage("prod", "3", "prod-Hunter2-pw", "")})
	secret, _, err := knit.NewCreateToken(w.k, "pay-1", "viewer", []string{"pay"}, "test").Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	w.tokens["pay"] = secret
	pay := w.client("pay")
	for q, want := range map[string]string{"a=prod&b=prod": "name an environment as team/env", "a=shop/prod@x&b=shop/prod": "must be a number"} {
		if code, page := get(t, pay, w.url+"/compare?"+q); code != http.StatusBadRequest || !strings.Contains(page, want) {
			t.Errorf("%s: %d, want 400 saying %q", q, code, want)
		}
	}
	codeA, exists := get(t, pay, w.url+"/compare?a=shop/prod&b=shop/prod")
	codeB, ghost := get(t, pay, w.url+"/compare?a=shop/ghost&b=shop/ghost")
	if codeA != http.StatusForbidden || codeB != codeA || strings.Replace(ghost, "ghost", "prod", -1) != exists {
		t.Errorf("another team's diff: %d / %d, or the pages differ", codeA, codeB)
	}
	if code, page := get(t, w.client("viewer"), w.url+"/compare?a=shop/prod&b=shop/nope"); code != http.StatusNotFound || !strings.Contains(page, "shop/nope") {
		t.Errorf("an unknown environment: %d", code)
	}
}

// TestComparePageOfTwoRevisionsLinksTheFileDiff: two revisions of one
// environment compare field by field, and link the file's diff as written.
func TestComparePageOfTwoRevisionsLinksTheFileDiff(t *testing.T) {
	w := newWorld(t, adapters.Config{})
	w.apply("shop-prod", map[string]string{"env.yaml": stage("prod", "3", "prod-Hunter2-pw", "")})
	w.apply("shop-prod", map[string]string{"env.yaml": stage("prod", "4", "prod-Hunter2-pw", "")})
	code, page := get(t, w.client("viewer"), w.url+"/compare?a=shop/prod@1&b=shop/prod@2")
	if code != http.StatusOK || !strings.Contains(page, `href="/env/shop/prod/diff?a=1&amp;b=2"`) ||
		!strings.Contains(page, "variables.replicas") || strings.Contains(page, "Hunter2") {
		t.Errorf("revisions 1 → 2: %d\n%s", code, page)
	}
}
