package web_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"knit.dev/knit/internal/adapters"
	"knit.dev/knit/internal/knit"
	"knit.dev/knit/internal/store"
	"knit.dev/knit/internal/view"
)

// payProd is pay/prod under the metadata name "ops" (the name of another
// team), with app gated; app's apply leaves MARK behind.
const payProd = `apiVersion: knit.dev/v1
kind: Environment
metadata: {name: ops}
spec:
  teamName: pay
  envName: prod
  autoApprove: true
  components:
    - name: db
      type: script
      script: {apply: "echo '{}'"}
    - name: app
      type: script
      autoApprove: false
      dependsOn: [db]
      script: {apply: "touch MARK; echo '{}'"}
`

const opsWeb = `apiVersion: knit.dev/v1
kind: Environment
metadata: {name: ops-web}
spec:
  teamName: ops
  envName: web
  autoApprove: true
  components:
    - name: site
      type: script
      script: {apply: "echo '{}'"}
`

// teamWorld is a world with pay/prod waiting for approval of app, ops/web
// applied, and an operator token limited to team ops. mark is the file
// app's apply creates.
func teamWorld(t *testing.T) (w *world, mark string) {
	t.Helper()
	w = newWorld(t, adapters.Config{})
	mark = filepath.Join(w.dir, "app-applied")
	w.apply("pay-prod", map[string]string{"env.yaml": strings.Replace(payProd, "MARK", mark, 1)})
	w.apply("ops-web", map[string]string{"env.yaml": opsWeb})
	secret, _, err := knit.NewCreateToken(w.k, "ops-operator", store.RoleOperator, []string{"ops"}, "test").Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	w.tokens["ops-operator"] = secret
	return w, mark
}

// pending is the one approval waiting in pay/prod.
func (w *world) pending(t *testing.T) view.Approval {
	t.Helper()
	list, err := knit.NewRecords(w.k).Approvals(context.Background(), "pay/prod", store.ApprovalPending)
	if err != nil || len(list) != 1 || list[0].Component != "app" {
		t.Fatalf("pending approvals of pay/prod: %+v %v", list, err)
	}
	return list[0]
}

// postForm posts a dashboard form with the session's CSRF token.
func postForm(t *testing.T, c *http.Client, base, path string, form url.Values) *http.Response {
	t.Helper()
	_, page := get(t, c, base+"/approvals")
	m := csrfField.FindStringSubmatch(page)
	if m == nil {
		t.Fatal("no CSRF token on the approvals page")
	}
	form.Set("csrf", m[1])
	resp, err := c.PostForm(base+path, form)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp
}

// TestDashboardRefusesADecisionOnAnotherTeamsPlan: an operator of team ops
// posts the decision form for pay/prod, by ID and by its metadata name
// "ops", with the right checksum: 403 each time, and nothing is decided
// or applied. A decision without the checksum is refused to anyone. The
// form with the checksum the page showed still works.
func TestDashboardRefusesADecisionOnAnotherTeamsPlan(t *testing.T) {
	w, mark := teamWorld(t)
	a := w.pending(t)
	ops := w.client("ops-operator")
	for _, env := range []string{"pay/prod", "ops"} {
		for _, decision := range []string{"approve", "reject"} {
			resp := postForm(t, ops, w.url, "/approvals/decide", url.Values{"env": {env}, "component": {"app"},
				"checksum": {a.PlanChecksum}, "decision": {decision}, "reason": {"not mine"}})
			if resp.StatusCode != http.StatusForbidden {
				t.Errorf("team ops: %s of %s: %s (Location %q), want 403", decision, env, resp.Status, resp.Header.Get("Location"))
			}
		}
	}
	op := w.client("operator")
	resp := postForm(t, op, w.url, "/approvals/decide", url.Values{"env": {"pay/prod"}, "component": {"app"}, "decision": {"approve"}})
	if resp.StatusCode != http.StatusBadRequest && resp.StatusCode != http.StatusConflict {
		t.Errorf("an approval without the checksum: %s, want 400 or 409", resp.Status)
	}
	if got := w.pending(t); got.ID != a.ID || got.DecidedBy != "" {
		t.Fatalf("a refused decision changed the approval: %+v", got)
	}
	if _, err := os.Stat(mark); err == nil {
		t.Fatal("a refused decision applied app")
	}

	// The page's own form: the checksum it showed, the metadata name.
	resp = postForm(t, op, w.url, "/approvals/decide", url.Values{"env": {"ops"}, "component": {"app"},
		"checksum": {a.PlanChecksum}, "decision": {"approve"}})
	if loc := resp.Header.Get("Location"); resp.StatusCode != http.StatusSeeOther || !strings.HasPrefix(loc, "/env/pay/prod?") {
		t.Fatalf("approval with the checksum: %s, Location %q", resp.Status, loc)
	}
	deadline := time.Now().Add(30 * time.Second)
	for _, err := os.Stat(mark); err != nil; _, err = os.Stat(mark) {
		if time.Now().After(deadline) {
			t.Fatal("hang guard: the approved plan was never applied")
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestDashboardHintNamesOnlyTheCallersTeams: the 404 page of an unknown
// environment lists only environments the session may see.
func TestDashboardHintNamesOnlyTheCallersTeams(t *testing.T) {
	w, _ := teamWorld(t)
	code, body := get(t, w.client("ops-operator"), w.url+"/env/ops/nope")
	if code != http.StatusNotFound || strings.Contains(body, "pay/") || !strings.Contains(body, "ops/web") {
		t.Errorf("unknown environment as team ops: %d\n%s", code, body)
	}
}

// TestDashboardUnknownRunIs404AtOnce: the page and the event stream of a
// run nobody knows answer 404 at once, rather than waiting for it.
func TestDashboardUnknownRunIs404AtOnce(t *testing.T) {
	w := newWorld(t, adapters.Config{})
	c := w.client("viewer")
	c.Timeout = 15 * time.Second // hang guard, not a timing assertion
	req, _ := http.NewRequest("GET", w.url+"/runs/20260101T000000-nope/events", nil)
	req.Header.Set("Accept", "text/event-stream")
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil || resp.StatusCode != http.StatusNotFound {
		t.Errorf("event stream of an unknown run: %s %q %v", resp.Status, body, err)
	}
	if code, _ := get(t, c, w.url+"/runs/20260101T000000-nope"); code != http.StatusNotFound {
		t.Errorf("page of an unknown run: %d", code)
	}
}

// TestEveryPageHasSecurityHeaders: the login page, pages behind it, error
// pages and static files all carry the CSP, frame, sniffing and referrer
// headers.
func TestEveryPageHasSecurityHeaders(t *testing.T) {
	w := newWorld(t, adapters.Config{})
	anon := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	signedIn := w.client("viewer")
	for _, p := range []struct {
		c    *http.Client
		path string
	}{{anon, "/login"}, {anon, "/"}, {signedIn, "/"}, {signedIn, "/env/x/y"}, {signedIn, "/static/app.css"}} {
		resp, err := p.c.Get(w.url + p.path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		h := resp.Header
		if csp := h.Get("Content-Security-Policy"); !strings.Contains(csp, "frame-ancestors 'none'") || !strings.Contains(csp, "default-src 'self'") ||
			h.Get("X-Frame-Options") != "DENY" || h.Get("X-Content-Type-Options") != "nosniff" || h.Get("Referrer-Policy") == "" {
			t.Errorf("GET %s (%s) lacks security headers: %v", p.path, resp.Status, h)
		}
	}
}

// browserURL resolves a Location header as a browser does: tabs and line
// breaks are dropped first (WHATWG URL parsing), then it is resolved
// against the page.
func browserURL(t *testing.T, base, loc string) *url.URL {
	t.Helper()
	b, _ := url.Parse(base)
	u, err := url.Parse(strings.NewReplacer("\t", "", "\n", "", "\r", "").Replace(loc))
	if err != nil {
		t.Fatalf("Location %q: %v", loc, err)
	}
	return b.ResolveReference(u)
}

// TestLoginNextStaysOnTheOrigin: after signing in, next takes the browser
// only to a path of this site: never to another host, however next hides
// it (a tab, a line break, a backslash, a scheme).
func TestLoginNextStaysOnTheOrigin(t *testing.T) {
	w := newWorld(t, adapters.Config{})
	own, _ := url.Parse(w.url)
	anon := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	for _, next := range []string{"/\t/evil.example", "/\n/evil.example", "/\\evil.example", "//evil.example", "https://evil.example/",
		"/\t\\evil.example", " //evil.example", "/%09/evil.example"} {
		_, page := get(t, anon, w.url+"/login?next="+url.QueryEscape(next))
		if strings.Contains(page, "evil.example") && !strings.Contains(page, `value="/%09/evil.example"`) {
			t.Errorf("the login page keeps next=%q", next)
		}
		resp, err := anon.PostForm(w.url+"/login", url.Values{"token": {w.tokens["viewer"]}, "next": {next}})
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if to := browserURL(t, w.url+"/login", resp.Header.Get("Location")); resp.StatusCode != http.StatusSeeOther || to.Host != own.Host {
			t.Errorf("next=%q: %s to %q (a browser goes to %s)", next, resp.Status, resp.Header.Get("Location"), to)
		}
	}
}

// TestLoginNextStaysOnTheOriginInChromium: Chromium signs in from
// /login?next=%2F%09%2F<another loopback server> and stays on knit.
func TestLoginNextStaysOnTheOriginInChromium(t *testing.T) {
	ctx := browser(t)
	w := newWorld(t, adapters.Config{})
	evil := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, _ *http.Request) {
		io.WriteString(rw, "<!doctype html><title>evil</title><h1 id=evil>another origin</h1>")
	}))
	t.Cleanup(evil.Close)
	evilHost := strings.TrimPrefix(evil.URL, "http://")
	run(t, ctx, "login page", chromedp.Navigate(w.url+"/login?next="+url.QueryEscape("/\t/"+evilHost+"/")), chromedp.WaitVisible(chromedp.CSS("#token")))
	// The page after signing in: knit's environments, or the other origin's.
	run(t, ctx, "sign in", chromedp.SendKeys(chromedp.CSS("#token"), w.tokens["viewer"]), chromedp.Submit(chromedp.CSS("#token")),
		chromedp.WaitVisible(chromedp.CSS("table.envs, #evil")))
	if host := eval[string](t, ctx, `location.host`); host != strings.TrimPrefix(w.url, "http://") {
		t.Fatalf("signing in took the browser to %s", host)
	}
}

// TestChromiumRefusesADecisionOnAnotherTeamsPlan: signed in as an
// operator of team ops, a page script posts the decision form for pay/prod
// under its metadata name "ops", with the right checksum and the session's
// CSRF token: the browser lands on a 403 page, and nothing is decided or
// applied.
func TestChromiumRefusesADecisionOnAnotherTeamsPlan(t *testing.T) {
	ctx := browser(t)
	w, mark := teamWorld(t)
	a := w.pending(t)
	run(t, ctx, "sign in", chromedp.Navigate(w.url+"/login?next=%2Fapprovals"), chromedp.WaitVisible(chromedp.CSS("#token")),
		chromedp.SendKeys(chromedp.CSS("#token"), w.tokens["ops-operator"]), chromedp.Submit(chromedp.CSS("#token")),
		chromedp.WaitVisible(chromedp.CSS("#w-title")))
	if body := text(t, ctx, "main"); !strings.Contains(body, "Nothing waits for approval") {
		t.Fatalf("team ops sees another team's approval:\n%s", body)
	}
	_ = eval[bool](t, ctx, `(() => {
		const f = document.createElement("form");
		f.method = "post"; f.action = "/approvals/decide";
		const add = (n, v) => { const i = document.createElement("input"); i.type = "hidden"; i.name = n; i.value = v; f.appendChild(i); };
		add("csrf", document.querySelector("input[name=csrf]").value);
		add("env", "ops"); add("component", "app"); add("checksum", "`+a.PlanChecksum+`"); add("decision", "approve");
		document.body.appendChild(f); f.submit(); return true; })()`)
	run(t, ctx, "the answer", chromedp.WaitVisible(chromedp.CSS(`p.error[role=alert]`)))
	if code := text(t, ctx, "main h1"); code != "403" {
		t.Errorf("the decision page says %s: %s", code, text(t, ctx, "p.error"))
	}
	if got := w.pending(t); got.ID != a.ID || got.DecidedBy != "" {
		t.Fatalf("a refused decision changed the approval: %+v", got)
	}
	if _, err := os.Stat(mark); err == nil {
		t.Fatal("a refused decision applied app")
	}
}

// TestDashboardRunStreamShowsNothingToAnotherTeam: a run's event stream
// gives a token of its team the run's fragments and its end, and a token
// limited to another team only the end: not a component, not a status.
func TestDashboardRunStreamShowsNothingToAnotherTeam(t *testing.T) {
	w := newWorld(t, adapters.Config{})
	w.apply("ops-web", map[string]string{"env.yaml": opsWeb})
	last, err := knit.NewRecords(w.k).LastRun(context.Background(), "ops/web")
	if err != nil || last == nil {
		t.Fatalf("last run of ops/web: %v %v", last, err)
	}
	for name, team := range map[string]string{"ops-viewer": "ops", "shop-viewer": "shop"} {
		secret, _, err := knit.NewCreateToken(w.k, name, store.RoleViewer, []string{team}, "test").Run(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		w.tokens[name] = secret
	}
	stream := func(role string, want int) string {
		t.Helper()
		c := w.client(role)
		c.Timeout = 30 * time.Second // hang guard, not a timing assertion
		req, _ := http.NewRequest("GET", w.url+"/runs/"+last.ID+"/events", nil)
		req.Header.Set("Accept", "text/event-stream")
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		if err != nil || resp.StatusCode != want {
			t.Fatalf("%s: %s %v, want %d", role, resp.Status, err, want)
		}
		return string(body)
	}
	if own := stream("ops-viewer", http.StatusOK); !strings.Contains(own, "site") || !strings.Contains(own, "succeeded") || !strings.HasSuffix(own, "event: done\ndata: done\n\n") {
		t.Errorf("the run's own team's stream:\n%s", own)
	}
	// Another team's run is one the dashboard does not know (the lookup's
	// team check, as for its page): a 404 saying no more than for an
	// unknown ID.
	if other := stream("shop-viewer", http.StatusNotFound); strings.Contains(other, "site") || strings.Contains(other, "succeeded") ||
		strings.Contains(other, "ops") || !strings.Contains(other, "no run "+last.ID) {
		t.Errorf("another team's stream:\n%s", other)
	}
}
