package web_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"knit.dev/knit/internal/adapters"
)

// liveStreams is a loopback proxy in front of the dashboard that counts
// the live streams (the pages' EventSources) open through it: what the
// server holds open for the browser.
type liveStreams struct {
	open, most atomic.Int32
	url        string
}

func newLiveStreams(t *testing.T, target string) *liveStreams {
	t.Helper()
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	ls := &liveStreams{}
	proxy := httputil.NewSingleHostReverseProxy(u)
	srv := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Accept") == "text/event-stream" {
			n := ls.open.Add(1)
			for m := ls.most.Load(); n > m && !ls.most.CompareAndSwap(m, n); m = ls.most.Load() {
			}
			defer ls.open.Add(-1)
		}
		proxy.ServeHTTP(rw, r)
	}))
	t.Cleanup(func() { srv.CloseClientConnections(); srv.Close() })
	ls.url = srv.URL
	return ls
}

// waitStreams waits until exactly want live streams are open.
func (ls *liveStreams) waitStreams(t *testing.T, what string, want int32) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for ls.open.Load() != want {
		if time.Now().After(deadline) {
			t.Fatalf("%s: %d live streams open, want %d (a page kept in the back/forward cache holds its stream)", what, ls.open.Load(), want)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Pages kept in Chromium's back/forward cache close their live streams
// and reopen them when they are shown again: 20 navigations between live
// pages, with the cache on, never leave more than the shown page's stream
// open, so no navigation waits for one of the browser's six connections
// per host (issue 39: the 7th waited a minute).
func TestBackForwardCacheClosesLiveStreams(t *testing.T) {
	ctx := browser(t)
	w := newWorld(t, adapters.Config{})
	w.apply("shop-dev", map[string]string{"env.yaml": shopV1})
	ls := newLiveStreams(t, w.url)
	run(t, ctx, "login", chromedp.Navigate(ls.url+"/"), chromedp.WaitVisible(chromedp.CSS("#token")),
		chromedp.SendKeys(chromedp.CSS("#token"), w.tokens["viewer"]), chromedp.Submit(chromedp.CSS("#token")),
		chromedp.WaitVisible(chromedp.CSS("table.envs")))
	ls.waitStreams(t, "the environments list", 1)

	pages := []string{"/env/shop/dev", "/"}
	// Each page counts the times it is shown again from the cache.
	const restored = `(() => { window.knitRestored = 0; addEventListener("pageshow", e => { if (e.persisted) window.knitRestored++; }); return 0; })()`
	var waits []string
	for i := range 20 {
		what := "navigation " + string(rune('a'+i))
		if i%5 == 4 {
			// Back: the page is shown again from the back/forward cache
			// (the cache is on) and opens its stream again.
			before := eval[string](t, ctx, `location.pathname`)
			_ = eval[int](t, ctx, `(history.back(), 0)`)
			untilTrue(t, ctx, what+": the previous page back from the cache", `location.pathname !== `+quote(before)+` && window.knitRestored > 0`)
			_ = eval[int](t, ctx, restored)
			ls.waitStreams(t, what+" (back)", 1)
			waits = append(waits, "back")
			continue
		}
		page := pages[i%2]
		c, cancel := context.WithTimeout(ctx, 30*time.Second)
		_, err := chromedp.Run(c, chromedp.Navigate(ls.url+page))
		cancel()
		if err != nil {
			t.Fatalf("%s to %s did not complete within 30s (%d live streams open): %v", what, page, ls.open.Load(), err)
		}
		_ = eval[int](t, ctx, restored)
		ls.waitStreams(t, what+" to "+page, 1)
		ttfb := eval[float64](t, ctx, `(() => { const n = performance.getEntriesByType("navigation")[0]; return n.responseStart - n.startTime; })()`)
		waits = append(waits, page+" "+time.Duration(ttfb*float64(time.Millisecond)).Round(time.Millisecond).String())
	}
	t.Logf("first byte of each navigation: %s; most live streams open at once: %d", strings.Join(waits, ", "), ls.most.Load())
}

// untilTrue evaluates cond until it holds. It stands for waitFor where
// chromedp's polling loses its execution context: a page shown again from
// the back/forward cache keeps its own.
func untilTrue(t *testing.T, ctx context.Context, what, cond string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		c, cancel := context.WithTimeout(ctx, 5*time.Second)
		ok, err := chromedp.Run(c, chromedp.Evaluate[bool](cond))
		cancel()
		if err == nil && ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("wait for %s: not within 30s (last error: %v)", what, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func quote(s string) string { return "'" + strings.ReplaceAll(s, "'", `\'`) + "'" }
