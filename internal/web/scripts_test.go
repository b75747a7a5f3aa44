package web_test

import (
	"bytes"
	"context"
	"image/png"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"

	"knit.dev/knit/internal/adapters"
	"knit.dev/knit/internal/knit"
	"knit.dev/knit/internal/store"
	"knit.dev/knit/internal/testtools"
)

// bearerGet fetches a page with only an Authorization header.
func bearerGet(t *testing.T, w *world, path, auth string) (*http.Response, string) {
	t.Helper()
	req, _ := http.NewRequest("GET", w.url+path, nil)
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	c := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

// A script reads the dashboard with Authorization: Bearer TOKEN, as it
// reads the API: the token's role and teams hold as they do for the
// cookie, a bad token is a 401 (not the login page), and ?live=0 renders
// a page without its live stream.
func TestDashboardTakesABearerToken(t *testing.T) {
	w := newWorld(t, adapters.Config{})
	w.apply("shop-dev", map[string]string{"env.yaml": shopV1})
	other, _, err := knit.NewCreateToken(w.k, "pay-viewer", store.RoleViewer, []string{"pay"}, "test").Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	resp, body := bearerGet(t, w, "/env/shop/dev", "Bearer "+w.tokens["viewer"])
	if resp.StatusCode != http.StatusOK || !strings.Contains(body, `id="n-db"`) || !strings.Contains(body, `sse-connect="/env/shop/dev/live?since=`) {
		t.Fatalf("a viewer's bearer token: %s\n%s", resp.Status, body)
	}
	if _, body := bearerGet(t, w, "/env/shop/dev?live=0", "Bearer "+w.tokens["viewer"]); strings.Contains(body, "sse-connect") ||
		strings.Contains(body, "hx-trigger") || !strings.Contains(body, `data-live="0"`) || !strings.Contains(body, `id="n-db"`) {
		t.Errorf("?live=0 still has live updates:\n%s", body)
	}
	if _, body := bearerGet(t, w, "/?live=0", "Bearer "+w.tokens["viewer"]); strings.Contains(body, "sse-connect") || !strings.Contains(body, "dev") {
		t.Errorf("the environments list with ?live=0:\n%s", body)
	}
	for _, c := range []struct {
		what, path, auth string
		want             int
	}{
		{"an unknown token", "/env/shop/dev", "Bearer knit_nope", http.StatusUnauthorized},
		{"another scheme", "/env/shop/dev", "Basic " + w.tokens["viewer"], http.StatusUnauthorized},
		{"an unknown token on a live stream", "/env/shop/dev/live", "Bearer knit_nope", http.StatusUnauthorized},
		{"another team's token", "/env/shop/dev", "Bearer " + other, http.StatusNotFound},
		{"a viewer on an operator's page", "/env/shop/dev/teardown", "Bearer " + w.tokens["viewer"], http.StatusForbidden},
	} {
		resp, body := bearerGet(t, w, c.path, c.auth)
		if resp.StatusCode != c.want || strings.Contains(body, `id="n-db"`) {
			t.Errorf("%s: %s, want %d:\n%s", c.what, resp.Status, c.want, body)
		}
		if c.want == http.StatusUnauthorized && resp.Header.Get("WWW-Authenticate") == "" {
			t.Errorf("%s: no WWW-Authenticate header", c.what)
		}
	}
}

// A bearer token only reads: a form POST carrying one is refused, from
// another origin or not, with or without the page's CSRF token, beside
// a signed-in cookie or not, and starts no run.
func TestDashboardRefusesFormPostsWithABearerToken(t *testing.T) {
	w := newWorld(t, adapters.Config{})
	w.apply("shop-dev", map[string]string{"env.yaml": shopV1})
	runs := func() int {
		h, err := knit.NewRecords(w.k).History(context.Background(), "shop/dev", "", 100)
		if err != nil {
			t.Fatal(err)
		}
		return len(h.Items)
	}
	before := runs()
	bearer := "Bearer " + w.tokens["operator"]
	_, page := bearerGet(t, w, "/env/shop/dev", bearer)
	m := csrfField.FindStringSubmatch(page)
	if m == nil {
		t.Fatalf("no CSRF token on the operator's page:\n%s", page)
	}
	cookie := w.client("operator")
	for _, c := range []struct {
		what   string
		form   url.Values
		header map[string]string
		client *http.Client
	}{
		{"a forged cross-origin POST with only a bearer header", url.Values{"kind": {"apply"}},
			map[string]string{"Origin": "http://evil.example", "Sec-Fetch-Site": "cross-site"}, http.DefaultClient},
		{"a cross-origin POST with a bearer header and the CSRF token", url.Values{"kind": {"apply"}, "csrf": {m[1]}},
			map[string]string{"Origin": "http://evil.example"}, http.DefaultClient},
		{"a same-origin POST with a bearer header and the CSRF token", url.Values{"kind": {"apply"}, "csrf": {m[1]}},
			map[string]string{"Origin": w.url, "Sec-Fetch-Site": "same-origin"}, http.DefaultClient},
		{"a POST with a bearer header beside the signed-in cookie", url.Values{"kind": {"apply"}, "csrf": {m[1]}},
			map[string]string{"Origin": w.url}, cookie},
	} {
		req, _ := http.NewRequest("POST", w.url+"/env/shop/dev/run", strings.NewReader(c.form.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("Authorization", bearer)
		for k, v := range c.header {
			req.Header.Set(k, v)
		}
		resp, err := c.client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusForbidden {
			t.Errorf("%s: %s, want 403", c.what, resp.Status)
		}
	}
	if n := runs(); n != before {
		t.Errorf("refused posts started %d runs", n-before)
	}
}

// A headless Chromium with a bearer header set through the DevTools
// protocol (no sign-in, no cookie) screenshots an environment's page with
// ?live=0: the page is drawn, with its name and every component, and
// opens no live stream; without ?live=0 the same header opens one.
func TestChromiumScreenshotsAPageWithABearerToken(t *testing.T) {
	ctx := browser(t)
	w := newWorld(t, adapters.Config{})
	w.apply("shop-dev", map[string]string{"env.yaml": shopV1})
	ls := newLiveStreams(t, w.url)
	if _, err := chromedp.Call(ctx, network.Enable, network.EnableParams{}); err != nil {
		t.Fatal(err)
	}
	if _, err := chromedp.Call(ctx, network.SetExtraHTTPHeaders, network.SetExtraHTTPHeadersParams{
		Headers: network.Headers{"Authorization": "Bearer " + w.tokens["viewer"]}}); err != nil {
		t.Fatal(err)
	}
	run(t, ctx, "the page with ?live=0", chromedp.Navigate(ls.url+"/env/shop/dev?live=0"), chromedp.WaitVisible(chromedp.CSS("#graph[data-drawn]")))
	shot := runT(t, ctx, "screenshot", chromedp.FullScreenshot(100))
	img, err := png.Decode(bytes.NewReader(shot))
	if err != nil || img.Bounds().Dx() < 1000 {
		t.Fatalf("the screenshot is no page: %v %v", err, img)
	}
	if shots {
		writeFileAt(t, filepath.Join(testtools.ModuleRoot(t), "docs", "screenshots", "environment-live0-desktop.png"), shot)
	} else if err := os.WriteFile(filepath.Join(t.TempDir(), "page.png"), shot, 0o644); err != nil {
		t.Fatal(err)
	}
	if h1 := text(t, ctx, "h1"); h1 != "shop/dev" {
		t.Errorf("the page's heading: %q", h1)
	}
	wantStates(t, graphStates(t, ctx), map[string]string{"network": "applied", "db": "applied", "api": "applied", "web": "applied"})
	if n := eval[int](t, ctx, `document.querySelectorAll("ul.nodelist li").length`); n != 4 {
		t.Errorf("the component list has %d items, want 4", n)
	}
	if n := eval[int](t, ctx, `document.querySelectorAll("[sse-connect]").length`); n != 0 || ls.most.Load() != 0 {
		t.Errorf("?live=0: %d live elements, %d streams opened", n, ls.most.Load())
	}
	checkAxe(t, ctx, "environment with ?live=0")
	run(t, ctx, "the live page", chromedp.Navigate(ls.url+"/env/shop/dev"), chromedp.WaitVisible(chromedp.CSS("#graph[data-drawn]")))
	ls.waitStreams(t, "the live page with a bearer header", 1)
}
