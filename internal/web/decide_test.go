package web_test

import (
	"context"
	"net/http"
	"net/url"
	"os"
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

// gated is shop/gate: db's apply waits for the file GO; db is gated from
// the second version on (size 2), api and web wait behind it.
const gated = `apiVersion: knit.dev/v1
kind: Environment
metadata: {name: shop-gate}
spec:
  teamName: shop
  envName: gate
  autoApprove: true
  components:
    - name: db
      type: script
      variables: [{name: size, value: 1}]
      outputs: [{name: host}]
      script: {apply: "while [ ! -f GO ]; do sleep 0.05; done; echo db size $KNIT_VAR_SIZE >&2; echo '{\"host\": \"db.internal\"}'"}
    - name: api
      type: script
      variables: [{name: db, valueFrom: db.host}]
      script: {apply: "echo '{}'"}
    - name: web
      type: script
      dependsOn: [api]
      script: {apply: "echo '{}'"}
`

func gatedV2(goFile string) string {
	s := strings.Replace(gated, "GO", goFile, 1)
	s = strings.Replace(s, "{name: size, value: 1}", "{name: size, value: 2}", 1)
	return strings.Replace(s, "    - name: db\n      type: script\n", "    - name: db\n      type: script\n      autoApprove: false\n", 1)
}

// signIn pastes role's token on the login page, which then opens next;
// it waits for ready there.
func signIn(t *testing.T, ctx context.Context, w *world, role, next, ready string) {
	t.Helper()
	run(t, ctx, "sign in as "+role, chromedp.Navigate(w.url+"/login?next="+url.QueryEscape(next)), chromedp.WaitVisible(chromedp.CSS("#token")),
		chromedp.SendKeys(chromedp.CSS("#token"), w.tokens[role]), chromedp.Submit(chromedp.CSS("#token")),
		chromedp.WaitVisible(chromedp.CSS(ready)))
}

// nodeFill is the computed fill of a graph node's box.
func nodeFill(name string) string {
	return `getComputedStyle(document.querySelector('#graph a.node[data-name="` + name + `"] rect.box')).fill`
}

// TestDashboardApprovesFromTheEnvironmentPage: the node that needs a person
// has its own colour (not the yellow of those waiting behind it) and leads
// to the decide form on the page, never to a CLI command; the form shows
// the plan and its checksum; Approve there applies the plan, and the graph,
// never reloaded, shows db applying and then everything applied, from the
// page's live stream. axe-core passes on the environment and component pages with their forms.
func TestDashboardApprovesFromTheEnvironmentPage(t *testing.T) {
	ctx := browser(t)
	w := newWorld(t, adapters.Config{})
	goFile := filepath.Join(w.dir, "GO")
	writeFileAt(t, goFile, nil)
	w.apply("shop-gate", map[string]string{"env.yaml": strings.Replace(gated, "GO", goFile, 1)})
	if err := os.Remove(goFile); err != nil {
		t.Fatal(err)
	}
	w.apply("shop-gate", map[string]string{"env.yaml": gatedV2(goFile)})

	signIn(t, ctx, w, "operator", "/env/shop/gate", "#graph[data-drawn]")
	wantStates(t, graphStates(t, ctx), map[string]string{"db": "awaiting-approval", "api": "waiting", "web": "waiting"})

	// Needs you ≠ waiting behind it.
	classes := eval[map[string]string](t, ctx, `Object.fromEntries([...document.querySelectorAll("#graph a.node")].map(a => [a.dataset.name, a.getAttribute("class")]))`)
	if !strings.Contains(classes["db"], "tone-act") || !strings.Contains(classes["api"], "tone-wait") {
		t.Errorf("node classes: %v", classes)
	}
	if db, api := eval[string](t, ctx, nodeFill("db")), eval[string](t, ctx, nodeFill("api")); db == api {
		t.Errorf("the node that needs a person is coloured %s like the one waiting behind it", db)
	}
	// The node leads to the form on this page, and says so in full.
	node := eval[string](t, ctx, `document.querySelector('#graph a.node[data-name="db"]').textContent`)
	if strings.Contains(node, "knit ") || !strings.Contains(node, "approve or reject →") {
		t.Errorf("db's node says %q", node)
	}
	fits := eval[bool](t, ctx, `(() => { const a = document.querySelector('#graph a.node[data-name="db"]');
		const box = a.querySelector("rect.box").getBBox(); return [...a.querySelectorAll("text")].every(t => { const b = t.getBBox(); return b.x + b.width <= box.x + box.width && b.y + b.height <= box.y + box.height; }); })()`)
	if !fits {
		t.Error("a line of db's node runs out of its box")
	}
	href := eval[string](t, ctx, `document.querySelector('#graph a.node[data-name="db"]').getAttribute("href")`)
	if !strings.HasPrefix(href, "#ap-") || eval[int](t, ctx, `document.querySelectorAll("`+href+` form.decide button[value=approve]").length`) != 1 {
		t.Errorf("db's node links to %q, which is not its decide form", href)
	}
	form := text(t, ctx, href)
	for _, want := range []string{"db in shop/gate needs a decision", "~1", "checksum", "script.db"} {
		if !strings.Contains(form, want) {
			t.Errorf("the decide form lacks %q:\n%s", want, form)
		}
	}
	if diff := eval[string](t, ctx, `document.querySelector("`+href+` a[href*=diff]").getAttribute("href")`); diff != "/env/shop/gate/diff?a=1&b=2" {
		t.Errorf("the decide form links the file's diff as %q", diff)
	}
	if sum := eval[string](t, ctx, `document.querySelector("`+href+` input[name=checksum]").value`); len(sum) != 64 {
		t.Errorf("the form carries checksum %q", sum)
	}
	checkAxe(t, ctx, "environment with a decision")

	t.Run("component page", func(t *testing.T) {
		run(t, ctx, "db", chromedp.Navigate(w.url+"/env/shop/gate/c/db"), chromedp.WaitVisible(chromedp.CSS("form.decide")))
		if back := eval[string](t, ctx, `document.querySelector("form.decide input[name=back]").value`); back != "/env/shop/gate/c/db" {
			t.Errorf("the component page's form returns to %q", back)
		}
		checkAxe(t, ctx, "component with a decision")
		run(t, ctx, "approvals", chromedp.Navigate(w.url+"/approvals"), chromedp.WaitVisible(chromedp.CSS("form.decide")))
		checkAxe(t, ctx, "approvals")
	})

	run(t, ctx, "environment", chromedp.Navigate(w.url+"/env/shop/gate"), chromedp.WaitVisible(chromedp.CSS("#graph[data-drawn]")))
	run(t, ctx, "write a reason", chromedp.Click(chromedp.CSS(`#graph a.node[data-name="db"]`)),
		chromedp.SendKeys(chromedp.CSS(href+" input[name=reason]"), "bigger db, reviewed"))
	// A live refresh of the page while the reviewer types keeps the reason.
	_ = eval[bool](t, ctx, `(window.knitSwaps = 0, document.addEventListener("htmx:afterSettle", () => window.knitSwaps++), htmx.trigger(document.querySelector(".live"), "sse:changed"), true)`)
	waitFor(t, ctx, "a live refresh", `window.knitSwaps > 0`)
	if got := eval[string](t, ctx, `document.querySelector("`+href+` input[name=reason]").value`); got != "bigger db, reviewed" {
		t.Errorf("after a live refresh the reason reads %q", got)
	}
	run(t, ctx, "approve",
		chromedp.Click(chromedp.CSS(href+` button[value=approve]`)),
		chromedp.WaitVisible(chromedp.CSS("p.flash")))
	if flash := text(t, ctx, "p.flash"); !strings.Contains(flash, "approved db") {
		t.Errorf("after approving: %q", flash)
	}
	// From here on nothing reloads the page: a marker set now survives.
	_ = eval[int](t, ctx, `window.knitMarker = 42`)
	waitFor(t, ctx, "db applying, live", `(() => { const a = document.querySelector('#graph a.node[data-name="db"]'); return a && a.classList.contains("tone-busy"); })()`)
	writeFileAt(t, goFile, nil)
	waitFor(t, ctx, "db, api and web applied", `(() => { const s = `+nodeStates+`; return s.db === "applied" && s.api === "applied" && s.web === "applied"; })()`)
	if marker := eval[int](t, ctx, `window.knitMarker || 0`); marker != 42 {
		t.Error("the page reloaded to show the new states")
	}
	if n := eval[int](t, ctx, `document.querySelectorAll("form.decide").length`); n != 0 {
		t.Errorf("%d decide forms remain after the decision", n)
	}
}

// TestDashboardDecideFormsAreForDeciders: a viewer reads the waiting plan
// on every page but gets no Approve or Reject button, and its forged
// decision is refused; so are decisions without the session's CSRF token
// or from another origin. An operator rejects from the component page and
// returns there.
func TestDashboardDecideFormsAreForDeciders(t *testing.T) {
	w, mark := teamWorld(t)
	a := w.pending(t)
	viewer := w.client("viewer")
	for _, page := range []string{"/env/pay/prod", "/env/pay/prod/c/app", "/approvals"} {
		_, body := get(t, viewer, w.url+page)
		if !strings.Contains(body, a.PlanChecksum[:12]) || !strings.Contains(body, "needs a decision") {
			t.Errorf("a viewer does not see the waiting plan on %s", page)
		}
		if strings.Contains(body, `value="approve"`) || strings.Contains(body, `value="reject"`) || strings.Contains(body, `action="/approvals/decide"`) {
			t.Errorf("a viewer sees decide buttons on %s", page)
		}
	}
	form := url.Values{"env": {"pay/prod"}, "component": {"app"}, "checksum": {a.PlanChecksum}, "decision": {"approve"}}
	if resp := postForm(t, viewer, w.url, "/approvals/decide", form); resp.StatusCode != http.StatusForbidden {
		t.Errorf("a viewer's decision: %s, want 403", resp.Status)
	}
	op := w.client("operator")
	_, page := get(t, op, w.url+"/env/pay/prod")
	csrf := csrfField.FindStringSubmatch(page)[1]
	post := func(form url.Values, header map[string]string) *http.Response {
		req, _ := http.NewRequest("POST", w.url+"/approvals/decide", strings.NewReader(form.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		for k, v := range header {
			req.Header.Set(k, v)
		}
		resp, err := op.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp
	}
	if resp := post(form, nil); resp.StatusCode != http.StatusForbidden {
		t.Errorf("a decision without the CSRF token: %s, want 403", resp.Status)
	}
	form.Set("csrf", csrf)
	if resp := post(form, map[string]string{"Origin": "http://evil.example"}); resp.StatusCode != http.StatusForbidden {
		t.Errorf("a decision from another origin: %s, want 403", resp.Status)
	}
	if got := w.pending(t); got.ID != a.ID || got.DecidedBy != "" {
		t.Fatalf("a refused decision changed the approval: %+v", got)
	}
	form.Set("decision", "reject")
	form.Set("back", "/env/pay/prod/c/app")
	resp := post(form, map[string]string{"Origin": w.url})
	if loc := resp.Header.Get("Location"); resp.StatusCode != http.StatusSeeOther || !strings.HasPrefix(loc, "/env/pay/prod/c/app?flash=rejected") {
		t.Errorf("a rejection from the component page: %s to %q", resp.Status, loc)
	}
	if _, err := os.Stat(mark); err == nil {
		t.Error("a rejected plan was applied")
	}
	_, body := get(t, op, w.url+"/env/pay/prod")
	if strings.Contains(body, `action="/approvals/decide"`) {
		t.Error("the environment page still offers a decision after the rejection")
	}
}

// tofuGated is a terraform component whose second version changes a
// plain and a sensitive input, gated.
const tofuGatedModule = `
variable "name" { type = string }
variable "secret" {
  type      = string
  sensitive = true
}
resource "terraform_data" "plain" { input = var.name }
resource "terraform_data" "hidden" { input = var.secret }
`

const tofuGated = `apiVersion: knit.dev/v1
kind: Environment
metadata: {name: infra-gate}
spec:
  teamName: infra
  envName: gate
  autoApprove: true
  components:
    - name: net
      type: terraform
      module: {source: ./modules/node}
      variables: [{name: name, value: NAME}, {name: secret, value: SECRET}]
`

// TestDashboardShowsOldAndNewValues: with real OpenTofu, a gated update's
// decide form shows each changed attribute's old and new value, and masks
// the sensitive one on both sides.
func TestDashboardShowsOldAndNewValues(t *testing.T) {
	ctx := browser(t)
	w := newWorld(t, adapters.Config{Tools: adapters.Tools{TFBinary: testtools.Tofu(t).Path}})
	env := func(name, secret string, gate bool) map[string]string {
		s := strings.NewReplacer("NAME", name, "SECRET", secret).Replace(tofuGated)
		if gate {
			s = strings.Replace(s, "      type: terraform\n", "      type: terraform\n      autoApprove: false\n", 1)
		}
		return map[string]string{"env.yaml": s, "modules/node/main.tf": tofuGatedModule}
	}
	w.apply("infra-gate", env("blue", "hunter2", false))
	w.apply("infra-gate", env("green", "hunter3", true))
	signIn(t, ctx, w, "operator", "/env/infra/gate/c/net", "form.decide")
	form := text(t, ctx, "article.approval")
	for _, want := range []string{"terraform_data.plain", `"blue"`, `"green"`, "terraform_data.hidden", "(sensitive)"} {
		if !strings.Contains(form, want) {
			t.Errorf("the decide form lacks %q:\n%s", want, form)
		}
	}
	if strings.Contains(form, "hunter") {
		t.Errorf("a sensitive value is shown:\n%s", form)
	}
	checkAxe(t, ctx, "component with values")
}

// TestDashboardTimesTick: relative times are re-worded from the page's
// clock without a reload (the test moves the clock rather than wait).
func TestDashboardTimesTick(t *testing.T) {
	ctx := browser(t)
	w := newWorld(t, adapters.Config{})
	w.apply("ops-web", map[string]string{"env.yaml": opsWeb})
	signIn(t, ctx, w, "viewer", "/env/ops/web", ".runs time")
	_ = eval[bool](t, ctx, `window.knitMarker = 1, knit.now = () => Date.now() + 3*3600*1000, true`)
	waitFor(t, ctx, "the run's time to say 3h ago", `document.querySelector(".runs time").textContent === "3h ago"`)
	_ = eval[bool](t, ctx, `knit.now = () => Date.now() + 3*86400*1000, true`)
	waitFor(t, ctx, "the run's time to say 3d ago", `document.querySelector(".runs time").textContent === "3d ago"`)
	if eval[int](t, ctx, `window.knitMarker || 0`) != 1 {
		t.Error("the page reloaded")
	}
}

// TestDashboardRunsShowTheirCommit: a run applied from a git commit shows
// its short hash and subject on the environment and run pages, linked to
// the commit's page on the web host (without the credentials of the
// repository URL); a run from a file:// repository shows the commit
// unlinked.
func TestDashboardRunsShowTheirCommit(t *testing.T) {
	w := newWorld(t, adapters.Config{})
	ctx := context.Background()
	for _, c := range []struct{ team, repo, sha string }{
		{"ops", "https://x-access-token:s3cret@github.com/acme/infra.git", "0123456789abcdef0123456789abcdef01234567"},
		{"lab", "file:///srv/git/infra", "fedcba9876543210fedcba9876543210fedcba98"},
	} {
		dir := filepath.Join(w.dir, c.team)
		testtools.WriteFiles(t, dir, map[string]string{"env.yaml": strings.NewReplacer("teamName: ops", "teamName: "+c.team, "name: ops-web", "name: "+c.team+"-web").Replace(opsWeb)})
		env, diags := spec.Load(filepath.Join(dir, "env.yaml"))
		if diags.HasErrors() {
			t.Fatal(diags)
		}
		if _, err := knit.NewRun(w.k, knit.RunRequest{Kind: "apply", Env: env, Actor: "ann", Source: "git", Root: dir,
			Origin: c.repo + "@" + c.sha + ":env.yaml", Commit: c.sha, Author: "ann", Message: "site: first page\n\nlonger body"}).Run(ctx); err != nil {
			t.Fatal(err)
		}
	}
	viewer := w.client("viewer")
	_, page := get(t, viewer, w.url+"/env/ops/web")
	link := `<a href="https://github.com/acme/infra/commit/0123456789abcdef0123456789abcdef01234567" rel="noopener noreferrer"><code title="0123456789abcdef0123456789abcdef01234567">01234567</code></a> <span class="subject">site: first page</span>`
	if !strings.Contains(page, link) {
		t.Errorf("the environment page does not link the run's commit:\n%s", page)
	}
	if strings.Contains(page, "s3cret") || strings.Contains(page, "longer body") {
		t.Error("the page shows the repository's credentials or the message's body")
	}
	run := regexp.MustCompile(`href="/runs/([^"]+)"`).FindStringSubmatch(page)
	if _, rp := get(t, viewer, w.url+"/runs/"+run[1]); !strings.Contains(rp, link) {
		t.Errorf("the run page does not link its commit:\n%s", rp)
	}
	_, page = get(t, viewer, w.url+"/env/lab/web")
	if !strings.Contains(page, `<code title="fedcba9876543210fedcba9876543210fedcba98">fedcba98</code> <span class="subject">site: first page</span>`) ||
		strings.Contains(page, "/commit/fedcba98") {
		t.Errorf("a file:// repository's commit:\n%s", page)
	}
}
