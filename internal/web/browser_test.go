package web_test

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"knit.dev/knit/internal/adapters"
	"knit.dev/knit/internal/testtools"
)

// Screenshots of every page are written to docs/screenshots when
// KNIT_SCREENSHOTS=1 (they are committed; not rewritten on every run).
var shots = os.Getenv("KNIT_SCREENSHOTS") == "1"

// chromium finds Debian's chromium, skipping the test (failing it under CI
// or make test) when it is missing.
func chromium(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("-short: skipping a test that runs chromium")
	}
	for _, p := range []string{"chromium", "/usr/bin/chromium"} {
		if path, err := exec.LookPath(p); err == nil {
			return path
		}
	}
	if testtools.Required() {
		t.Fatal("chromium not found: run make tools (installs Debian's chromium)")
	}
	t.Skip("chromium not found: run make tools (installs Debian's chromium)")
	return ""
}

// browser starts a headless chromium with a fresh profile and no
// background networking, and returns a tab's context.
func browser(t *testing.T) context.Context {
	t.Helper()
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(chromium(t)),
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.NoFirstRun,
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1280, 900),
	)
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelCtx := chromedp.NewContext(actx)
	t.Cleanup(func() { cancelCtx(); cancelAlloc() })
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("start chromium: %v", err)
	}
	return ctx
}

// run runs chromedp steps with a deadline, failing the test on error.
func run(t *testing.T, ctx context.Context, what string, steps ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	runT(t, ctx, what, chromedp.Steps(steps...))
}

func runT[T any](t *testing.T, ctx context.Context, what string, a chromedp.Action[T]) T {
	t.Helper()
	c, cancel := context.WithTimeout(ctx, 45*time.Second)
	defer cancel()
	v, err := chromedp.Run(c, a)
	if err != nil {
		c2, cancel2 := context.WithTimeout(ctx, 5*time.Second)
		defer cancel2()
		body, _ := chromedp.Run(c2, chromedp.Text(chromedp.CSS("body")))
		t.Fatalf("%s: %v\npage text:\n%s", what, err, body)
	}
	return v
}

// eval evaluates a JavaScript expression, awaiting a promise.
func eval[T any](t *testing.T, ctx context.Context, expr string) T {
	t.Helper()
	return runT(t, ctx, "evaluate "+firstLine(expr), chromedp.Evaluate[T](expr, chromedp.EvalAwaitPromise))
}

func firstLine(s string) string {
	if len(s) > 120 {
		s = s[:120] + "…"
	}
	return s
}

// waitFor polls a JavaScript condition until it holds.
func waitFor(t *testing.T, ctx context.Context, what, cond string) {
	t.Helper()
	runT(t, ctx, "wait for "+what, chromedp.Poll[chromedp.Void](cond, chromedp.WithPollingTimeout(30*time.Second), chromedp.WithPollingInterval(100*time.Millisecond)))
}

var axeSource string

type violation struct {
	ID     string   `json:"id"`
	Impact string   `json:"impact"`
	Help   string   `json:"help"`
	Nodes  []string `json:"nodes"`
}

// checkAxe runs the vendored axe-core in the page and fails on serious or
// critical violations.
func checkAxe(t *testing.T, ctx context.Context, page string) {
	t.Helper()
	if axeSource == "" {
		b, err := os.ReadFile(filepath.Join("static", "vendor", "axe.min.js"))
		if err != nil {
			t.Fatal(err)
		}
		axeSource = string(b)
	}
	eval[bool](t, ctx, axeSource+";true")
	vs := eval[[]violation](t, ctx, `axe.run(document, {resultTypes: ["violations"]}).then(r => r.violations.map(v => ({id: v.id, impact: v.impact || "", help: v.help, nodes: v.nodes.slice(0, 3).map(n => n.html)})))`)
	for _, v := range vs {
		if v.Impact == "serious" || v.Impact == "critical" {
			t.Errorf("axe on %s: %s (%s): %s\n  %s", page, v.ID, v.Impact, v.Help, strings.Join(v.Nodes, "\n  "))
		}
	}
}

// screenshot writes the page at desktop (1280) and phone (390) width to
// docs/screenshots when KNIT_SCREENSHOTS=1, checking accessibility at
// phone width too.
func screenshot(t *testing.T, ctx context.Context, name, ready string) {
	t.Helper()
	if !shots {
		return
	}
	dir := filepath.Join(testtools.ModuleRoot(t), "docs", "screenshots")
	for _, size := range []struct {
		label  string
		w, h   int64
		mobile bool
	}{{"desktop", 1280, 900, false}, {"phone", 390, 844, true}} {
		vp := chromedp.EmulateViewport(size.w, size.h, chromedp.EmulateScale(1))
		if size.mobile {
			vp = chromedp.EmulateViewport(size.w, size.h, chromedp.EmulateScale(1), chromedp.EmulateMobile, chromedp.EmulatePortrait)
		}
		run(t, ctx, "viewport for "+name, vp, chromedp.Reload(), chromedp.WaitVisible(chromedp.CSS(ready)), chromedp.Sleep(300*time.Millisecond))
		png := runT(t, ctx, "screenshot "+name, chromedp.FullScreenshot(100))
		if size.mobile {
			checkAxe(t, ctx, name+" (phone)")
		}
		writeFileAt(t, filepath.Join(dir, fmt.Sprintf("%s-%s.png", name, size.label)), png)
	}
	run(t, ctx, "reset viewport", chromedp.EmulateViewport(1280, 900))
}

const shopV1 = `apiVersion: knit.dev/v1
kind: Environment
metadata: {name: shop-dev}
spec:
  teamName: shop
  envName: dev
  autoApprove: true
  components:
    - name: network
      type: script
      outputs: [{name: vpc}]
      script: {apply: "echo creating network >&2; echo '{\"vpc\": \"vpc-1\"}'"}
    - name: db
      type: script
      variables: [{name: vpc, valueFrom: network.vpc}, {name: size, value: 1}]
      outputs: [{name: host}, {name: password, sensitive: true}]
      script: {apply: "echo creating db in $KNIT_VAR_VPC >&2; echo '{\"host\": \"db.internal\", \"password\": \"hunter2\"}'"}
    - name: api
      type: script
      variables: [{name: db, valueFrom: db.host}]
      script: {apply: "echo api talks to $KNIT_VAR_DB >&2; echo '{}'"}
    - name: web
      type: script
      dependsOn: [api]
      script: {apply: "echo '{}'"}
`

// shopV2 grows the database and gates it behind an approval.
var shopV2 = strings.Replace(strings.Replace(shopV1, "{name: size, value: 1}", "{name: size, value: 2}", 1),
	"    - name: db\n      type: script\n", "    - name: db\n      type: script\n      autoApprove: false\n", 1)

const broken = `apiVersion: knit.dev/v1
kind: Environment
metadata: {name: shop-broken}
spec:
  teamName: shop
  envName: broken
  autoApprove: true
  components:
    - name: migrate
      type: script
      script: {apply: "echo step 1 of 2 ok >&2; echo 'boom: relation orders does not exist' >&2; exit 1"}
    - name: app
      type: script
      dependsOn: [migrate]
      script: {apply: "echo '{}'"}
`

const live = `apiVersion: knit.dev/v1
kind: Environment
metadata: {name: shop-live}
spec:
  teamName: shop
  envName: live
  autoApprove: true
  components:
    - name: cache
      type: script
      script:
        apply: "echo '{}'"
        destroy: "for i in 1 2 3 4 5; do echo removing cache part $i; sleep 0.3; done"
`

const tofuModule = `
variable "name" { type = string }
resource "terraform_data" "this" {
  input = var.name
}
output "id" { value = "${var.name}-${terraform_data.this.id}" }
`

const tofuEnv = `apiVersion: knit.dev/v1
kind: Environment
metadata: {name: infra-tofu}
spec:
  teamName: infra
  envName: tofu
  autoApprove: true
  components:
    - name: net
      type: terraform
      module: {source: ./modules/node}
      variables: [{name: name, value: net}]
      outputs: [{name: id}]
    - name: app
      type: script
      variables: [{name: net, valueFrom: net.id}]
      script: {apply: "echo deploying onto $KNIT_VAR_NET >&2; echo '{}'"}
`

// nodeStates reads the drawn graph: component → state.
// emptyGraphWatch counts the moments, after any change to the page, at
// which the graph box is there but has no drawing in it.
const emptyGraphWatch = `(() => {
	window.knitEmptyGraph = 0;
	new MutationObserver(() => {
		const g = document.getElementById("graph");
		if (g && !g.querySelector("svg")) window.knitEmptyGraph++;
	}).observe(document.body, {childList: true, subtree: true});
	return 0;
})()`

const nodeStates = `Object.fromEntries([...document.querySelectorAll("#graph a.node")].map(a => [a.dataset.name, a.dataset.state]))`

func graphStates(t *testing.T, ctx context.Context) map[string]string {
	t.Helper()
	waitFor(t, ctx, "the graph", `document.querySelector("#graph[data-drawn]") !== null`)
	var m map[string]string
	m = eval[map[string]string](t, ctx, nodeStates)
	return m
}

func wantStates(t *testing.T, got map[string]string, want map[string]string) {
	t.Helper()
	if len(got) != len(want) {
		t.Errorf("graph has %d nodes %v, want %d", len(got), got, len(want))
	}
	for name, st := range want {
		if got[name] != st {
			t.Errorf("node %s is %q, want %q (graph: %v)", name, got[name], st, got)
		}
	}
}

func text(t *testing.T, ctx context.Context, sel string) string {
	t.Helper()
	return runT(t, ctx, "read "+sel, chromedp.Text(chromedp.CSS(sel)))
}

// TestDashboard drives the dashboard in Chromium against a real knit serve:
// graph states, why components wait, approval from the page turning nodes
// green live, a failure's log tail, a live teardown log, viewer access,
// axe-core on every page, and screenshots.
func TestDashboard(t *testing.T) {
	ctx := browser(t)
	cfg := adapters.Config{}
	var tofu bool
	if _, err := os.Stat(filepath.Join(testtools.ModuleRoot(t), ".tools", "bin", "tofu")); err == nil || testtools.Required() {
		cfg.TFBinary, tofu = testtools.Tofu(t).Path, true
	}
	w := newWorld(t, cfg)
	w.apply("shop-dev", map[string]string{"env.yaml": shopV1})
	w.apply("shop-dev", map[string]string{"env.yaml": shopV2})
	w.apply("shop-broken", map[string]string{"env.yaml": broken})
	w.apply("shop-live", map[string]string{"env.yaml": live})
	if tofu {
		w.apply("infra-tofu", map[string]string{"env.yaml": tofuEnv, "modules/node/main.tf": tofuModule})
	}

	// Sign in by pasting a token.
	run(t, ctx, "login page", chromedp.Navigate(w.url+"/"), chromedp.WaitVisible(chromedp.CSS("#token")))
	checkAxe(t, ctx, "login")
	screenshot(t, ctx, "login", "#token")
	run(t, ctx, "sign in", chromedp.SendKeys(chromedp.CSS("#token"), w.tokens["operator"]), chromedp.Submit(chromedp.CSS("#token")),
		chromedp.WaitVisible(chromedp.CSS("table.envs")))
	var cookie string
	cookie = eval[string](t, ctx, `document.cookie`)
	if strings.Contains(cookie, "knit_") {
		t.Errorf("the token cookie is readable by scripts: %q", cookie)
	}

	t.Run("environments", func(t *testing.T) {
		body := text(t, ctx, "table.envs")
		for _, want := range []string{"dev", "broken", "live", "awaiting-approval", "failed"} {
			if !strings.Contains(body, want) {
				t.Errorf("environments list lacks %q:\n%s", want, body)
			}
		}
		// The state column uses the CLI's and the API's words.
		states := eval[[]string](t, ctx, `[...document.querySelectorAll("table.envs tbody tr td:nth-child(2)")].map(td => td.textContent.trim())`)
		for _, st := range states {
			if st != "applied" && st != "failed" && st != "awaiting-approval" && st != "applying" {
				t.Errorf("environments list state %q, want the CLI's words (%q)", st, states)
			}
		}
		run(t, ctx, "filter", chromedp.Navigate(w.url+"/?state=failed"), chromedp.WaitVisible(chromedp.CSS("table.envs")))
		if body := text(t, ctx, "table.envs tbody"); !strings.Contains(body, "broken") || strings.Contains(body, "live") {
			t.Errorf("filtered by state=failed:\n%s", body)
		}
		run(t, ctx, "list", chromedp.Navigate(w.url+"/"), chromedp.WaitVisible(chromedp.CSS("table.envs")))
		checkAxe(t, ctx, "environments")
		screenshot(t, ctx, "environments", "table.envs")
	})

	t.Run("graph and why", func(t *testing.T) {
		run(t, ctx, "environment", chromedp.Navigate(w.url+"/env/shop/dev"))
		wantStates(t, graphStates(t, ctx), map[string]string{"network": "applied", "db": "awaiting-approval", "api": "waiting", "web": "waiting"})
		why := text(t, ctx, "#n-api .why")
		if why != "waiting: db awaiting approval by an operator" {
			t.Errorf("api says why it waits: %q", why)
		}
		var graphWhy string
		graphWhy = eval[string](t, ctx, `document.querySelector('#graph a.node[data-name="api"]').textContent`)
		if !strings.Contains(graphWhy, "waiting: db awaiting approval") {
			t.Errorf("api's graph node: %q", graphWhy)
		}
		checkAxe(t, ctx, "environment")
		screenshot(t, ctx, "environment", "#graph[data-drawn]")
	})

	t.Run("component panel", func(t *testing.T) {
		run(t, ctx, "component", chromedp.Navigate(w.url+"/env/shop/dev/c/db"), chromedp.WaitVisible(chromedp.CSS("h1")))
		body := text(t, ctx, "main")
		for _, want := range []string{"network.vpc", "(sensitive)", "db.internal", "~1 to change", "script.db"} {
			if !strings.Contains(body, want) {
				t.Errorf("component panel lacks %q:\n%s", want, body)
			}
		}
		if strings.Contains(body, "hunter2") {
			t.Error("a sensitive output is shown in clear")
		}
		var href string
		href = eval[string](t, ctx, `[...document.querySelectorAll("a")].find(a => a.textContent.includes("network.vpc")).getAttribute("href")`)
		if href != "/env/shop/dev/c/network" {
			t.Errorf("valueFrom links to %q", href)
		}
		checkAxe(t, ctx, "component")
		screenshot(t, ctx, "component", "h1")
	})

	t.Run("revision diff", func(t *testing.T) {
		run(t, ctx, "diff", chromedp.Navigate(w.url+"/env/shop/dev/diff?a=1&b=2"), chromedp.WaitVisible(chromedp.CSS("pre.diff")))
		// The YAML as written, the component named on its group and hunk.
		d := text(t, ctx, "pre.diff")
		if !regexp.MustCompile(`(?m)^@@ -\d+,\d+ \+\d+,\d+ @@ component db$`).MatchString(d) ||
			!regexp.MustCompile(`(?m)^-\s+variables: .*\{name: size, value: 1\}\]$`).MatchString(d) ||
			!regexp.MustCompile(`(?m)^\+\s+variables: .*\{name: size, value: 2\}\]$`).MatchString(d) {
			t.Errorf("diff of revisions 1 and 2:\n%s", d)
		}
		if h := text(t, ctx, "section.diffgroup h2"); h != "component db" {
			t.Errorf("the diff's group is titled %q, want component db", h)
		}
		checkAxe(t, ctx, "diff")
		screenshot(t, ctx, "diff", "pre.diff")
	})

	t.Run("failure", func(t *testing.T) {
		run(t, ctx, "broken env", chromedp.Navigate(w.url+"/env/shop/broken"))
		wantStates(t, graphStates(t, ctx), map[string]string{"migrate": "failed", "app": "skipped"})
		if why := text(t, ctx, "#n-app .why"); why != "skipped: migrate failed" {
			t.Errorf("app says: %q", why)
		}
		run(t, ctx, "failed component", chromedp.Navigate(w.url+"/env/shop/broken/c/migrate"), chromedp.WaitVisible(chromedp.CSS("#logtail")))
		if log := text(t, ctx, "#logtail"); !strings.Contains(log, "boom: relation orders does not exist") {
			t.Errorf("log tail of the failed component:\n%s", log)
		}
		checkAxe(t, ctx, "failed component")
		screenshot(t, ctx, "component-failed", "#logtail")
	})

	if tofu {
		t.Run("tofu environment", func(t *testing.T) {
			run(t, ctx, "tofu env", chromedp.Navigate(w.url+"/env/infra/tofu"))
			wantStates(t, graphStates(t, ctx), map[string]string{"net": "applied", "app": "applied"})
			screenshot(t, ctx, "environment-tofu", "#graph[data-drawn]")
			run(t, ctx, "tofu component", chromedp.Navigate(w.url+"/env/infra/tofu/c/net"), chromedp.WaitVisible(chromedp.CSS("h1")))
			if body := text(t, ctx, "main"); !strings.Contains(body, "terraform_data.this") || !strings.Contains(body, "net-") {
				t.Errorf("tofu component panel:\n%s", body)
			}
		})
	}

	t.Run("approve from the page", func(t *testing.T) {
		run(t, ctx, "approvals", chromedp.Navigate(w.url+"/approvals"), chromedp.WaitVisible(chromedp.CSS("form.decide")))
		body := text(t, ctx, "main")
		if !strings.Contains(body, "db in shop/dev") || !strings.Contains(body, "checksum") {
			t.Errorf("approvals page:\n%s", body)
		}
		checkAxe(t, ctx, "approvals")
		screenshot(t, ctx, "approvals", "form.decide")
		run(t, ctx, "approve", chromedp.SendKeys(chromedp.CSS("form.decide input[name=reason]"), "bigger db, reviewed"),
			chromedp.Click(chromedp.CSS(`form.decide button[value=approve]`)),
			chromedp.WaitVisible(chromedp.CSS("#graph")))
		// From here on, nothing reloads the page: a marker set now survives.
		_ = eval[int](t, ctx, `window.knitMarker = 42`)
		// Live updates swap the page's data in; the graph must never be seen
		// empty after one (it was, for htmx's settle delay, and a reader of
		// the page in that moment found no nodes at all).
		_ = eval[int](t, ctx, emptyGraphWatch)
		waitFor(t, ctx, "db, api and web applied", `(() => { const s = `+nodeStates+`; return s.db === "applied" && s.api === "applied" && s.web === "applied"; })()`)
		// One more update for certain, as the server's change event brings it.
		_ = eval[int](t, ctx, `(() => { window.knitSettled = 0; document.addEventListener("htmx:afterSettle", () => window.knitSettled++); htmx.trigger(document.querySelector(".live"), "sse:changed"); return 0; })()`)
		waitFor(t, ctx, "a live update", `window.knitSettled > 0`)
		if empty := eval[int](t, ctx, `window.knitEmptyGraph`); empty > 0 {
			t.Errorf("the graph was empty after %d of the live updates", empty)
		}
		var marker int
		marker = eval[int](t, ctx, `window.knitMarker || 0`)
		if marker != 42 {
			t.Error("the page reloaded to show the new states")
		}
		var tone string
		tone = eval[string](t, ctx, `document.querySelector('#graph a.node[data-name="web"]').getAttribute("class")`)
		if !strings.Contains(tone, "tone-ok") {
			t.Errorf("web's node class %q is not green", tone)
		}
	})

	t.Run("audit", func(t *testing.T) {
		run(t, ctx, "audit", chromedp.Navigate(w.url+"/audit?env=shop/dev"), chromedp.WaitVisible(chromedp.CSS("table")))
		if body := text(t, ctx, "table"); !strings.Contains(body, "approve") || !strings.Contains(body, "bigger db, reviewed") {
			t.Errorf("audit trail:\n%s", body)
		}
		checkAxe(t, ctx, "audit")
		screenshot(t, ctx, "audit", "table")
	})

	t.Run("teardown with a live log", func(t *testing.T) {
		run(t, ctx, "live env", chromedp.Navigate(w.url+"/env/shop/live"), chromedp.WaitVisible(chromedp.CSS("#graph[data-drawn]")),
			chromedp.Click(chromedp.CSS(`a.button.danger`)), chromedp.WaitVisible(chromedp.CSS("#confirm")))
		if doomed := text(t, ctx, "ol.doomed"); !strings.Contains(doomed, "cache") {
			t.Errorf("teardown confirmation lists %q", doomed)
		}
		checkAxe(t, ctx, "teardown")
		screenshot(t, ctx, "teardown", "#confirm")
		run(t, ctx, "confirm", chromedp.SendKeys(chromedp.CSS("#confirm"), "shop/live"), chromedp.Click(chromedp.CSS("form.confirm button")),
			chromedp.WaitVisible(chromedp.CSS("#run-status")))
		_ = eval[int](t, ctx, `window.knitMarker = 7`)
		waitFor(t, ctx, "the first log line", `(document.querySelector("#log-cache") || {textContent: ""}).textContent.includes("removing cache part 1")`)
		var partial string
		partial = eval[string](t, ctx, `document.querySelector("#log-cache").textContent`)
		waitFor(t, ctx, "the run's end", `document.querySelector("#run-status").textContent.includes("succeeded")`)
		var full string
		full = eval[string](t, ctx, `document.querySelector("#log-cache").textContent`)
		var marker int
		marker = eval[int](t, ctx, `window.knitMarker || 0`)
		if marker != 7 || !strings.Contains(full, "removing cache part 5") {
			t.Errorf("live log (marker %d): %q", marker, full)
		}
		if strings.Contains(partial, "part 5") {
			t.Logf("the log arrived all at once: %q", partial)
		}
		if st := text(t, ctx, "#st-cache"); !strings.Contains(st, "destroyed") {
			t.Errorf("cache's status on the run page: %q", st)
		}
		checkAxe(t, ctx, "run")
		screenshot(t, ctx, "run", "#run-status")
	})

	t.Run("viewer sees no actions", func(t *testing.T) {
		run(t, ctx, "sign out", chromedp.Navigate(w.url+"/"), chromedp.WaitVisible(chromedp.CSS("form.who button")),
			chromedp.Click(chromedp.CSS("form.who button")), chromedp.WaitVisible(chromedp.CSS("#token")),
			chromedp.SendKeys(chromedp.CSS("#token"), w.tokens["viewer"]), chromedp.Submit(chromedp.CSS("#token")),
			chromedp.WaitVisible(chromedp.CSS("table.envs")))
		for _, page := range []string{"/env/shop/dev", "/approvals", "/env/shop/dev/c/db", "/"} {
			var n int
			run(t, ctx, "viewer "+page, chromedp.Navigate(w.url+page), chromedp.WaitVisible(chromedp.CSS("h1")))
			n = eval[int](t, ctx, `document.querySelectorAll("main form[method=post], main a.button, main button[value=approve]").length`)
			if n != 0 {
				t.Errorf("a viewer sees %d action controls on %s", n, page)
			}
		}
	})

	t.Run("forged posts are refused", func(t *testing.T) {
		c := w.client("operator")
		_, page := get(t, c, w.url+"/env/shop/broken")
		m := csrfField.FindStringSubmatch(page)
		if m == nil {
			t.Fatal("no CSRF token on the environment page")
		}
		post := func(form url.Values, header map[string]string) int {
			req, _ := http.NewRequest("POST", w.url+"/env/shop/broken/run", strings.NewReader(form.Encode()))
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			for k, v := range header {
				req.Header.Set(k, v)
			}
			resp, err := c.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			return resp.StatusCode
		}
		if code := post(url.Values{"kind": {"plan"}}, nil); code != http.StatusForbidden {
			t.Errorf("POST without a CSRF token: %d, want 403", code)
		}
		if code := post(url.Values{"kind": {"plan"}, "csrf": {"00" + m[1][2:]}}, nil); code != http.StatusForbidden {
			t.Errorf("POST with a wrong CSRF token: %d, want 403", code)
		}
		if code := post(url.Values{"kind": {"plan"}, "csrf": {m[1]}}, map[string]string{"Origin": "http://evil.example"}); code != http.StatusForbidden {
			t.Errorf("POST from another origin: %d, want 403", code)
		}
		if code := post(url.Values{"kind": {"plan"}, "csrf": {m[1]}}, map[string]string{"Sec-Fetch-Site": "cross-site"}); code != http.StatusForbidden {
			t.Errorf("cross-site POST: %d, want 403", code)
		}
		if code := post(url.Values{"kind": {"plan"}, "csrf": {m[1]}}, map[string]string{"Origin": w.url, "Sec-Fetch-Site": "same-origin"}); code != http.StatusSeeOther {
			t.Errorf("a real form POST: %d, want 303", code)
		}
		viewer := w.client("viewer")
		_, vpage := get(t, viewer, w.url+"/env/shop/broken")
		if strings.Contains(vpage, `action="/env/shop/broken/run"`) {
			t.Error("the viewer's page has run forms")
		}
		vm := csrfField.FindStringSubmatch(vpage) // the sign-out form's
		req, _ := http.NewRequest("POST", w.url+"/env/shop/broken/run", strings.NewReader(url.Values{"kind": {"plan"}, "csrf": {vm[1]}}.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		resp, err := viewer.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusForbidden {
			t.Errorf("a viewer's POST: %d, want 403", resp.StatusCode)
		}
	})
}
