package web_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"knit.dev/knit/internal/adapters"
	"knit.dev/knit/internal/knit"
	"knit.dev/knit/internal/runner"
	"knit.dev/knit/internal/runner/fake"
	"knit.dev/knit/internal/spec"
	"knit.dev/knit/internal/store"
	"knit.dev/knit/internal/store/sqlite"
)

// seedEnvironments puts n environments into the store through its API,
// spread over 20 teams and a few states, each with one recorded run.
func seedEnvironments(tb testing.TB, st store.Store, n int) {
	tb.Helper()
	ctx := context.Background()
	statuses := []store.EnvStatus{store.EnvApplied, store.EnvApplied, store.EnvApplied, store.EnvFailed, store.EnvAwaiting, store.EnvDrifted, store.EnvTornDown}
	spec := []byte(`{"apiVersion":"knit.dev/v1","kind":"Environment","metadata":{"name":"x"},"spec":{"components":[]}}`)
	start := time.Now()
	for i := range n {
		team := fmt.Sprintf("team-%02d", i%20)
		name := fmt.Sprintf("env-%05d", i)
		env := store.Environment{ID: team + "/" + name, Team: team, Name: name}
		if _, err := st.PutRevision(ctx, env, store.Revision{Source: "seed", Spec: spec}); err != nil {
			tb.Fatal(err)
		}
		if err := st.SetEnvironmentStatus(ctx, env.ID, statuses[i%len(statuses)]); err != nil {
			tb.Fatal(err)
		}
	}
	tb.Logf("seeded %d environments in %s", n, time.Since(start).Round(time.Millisecond))
}

// BenchmarkEnvironmentsPage is the environments page's server time with
// 10,000 environments in the SQLite store: the first page by name, a late
// page sorted by last change, and a page filtered by team and state.
func BenchmarkEnvironmentsPage(b *testing.B) {
	// The benchmark wires the store itself, as `knit serve` does, to seed it.
	st, err := sqlite.Open(context.Background(), b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { st.Close() })
	w := newWorld(b, adapters.Config{Config: knit.Config{Store: st}})
	seedEnvironments(b, st, 10000)
	h := w.srv.Handler()
	for _, c := range []struct{ name, url string }{
		{"first-page", "/"},
		{"sorted-by-change-page-100", "/?sort=updated&page=100"},
		{"team-and-state", "/?team=team-07&state=failed"},
	} {
		b.Run(c.name, func(b *testing.B) {
			req := httptest.NewRequest("GET", c.url, nil)
			req.AddCookie(&http.Cookie{Name: "knit_token", Value: w.tokens["viewer"]})
			for b.Loop() {
				rec := httptest.NewRecorder()
				h.ServeHTTP(rec, req)
				if rec.Code != http.StatusOK || !strings.Contains(rec.Body.String(), "environments") {
					b.Fatalf("%s: %d", c.url, rec.Code)
				}
			}
		})
	}
}

// TestGraphDrawTime measures, when KNIT_WEB_BENCH=1, the time from
// navigation to a drawn graph in Chromium for environments of 200 and
// 1,000 components in 20 layers (applied with the fake runner), median of
// 7 loads, and the time a live refresh takes to patch the drawn graph. It
// asserts nothing.
func TestGraphDrawTime(t *testing.T) {
	if os.Getenv("KNIT_WEB_BENCH") != "1" {
		t.Skip("set KNIT_WEB_BENCH=1 to measure the graph's drawing time")
	}
	ctx := browser(t)
	w := newWorld(t, adapters.Config{Config: knit.Config{Runners: map[string]runner.Runner{spec.TypeScript: &fake.Runner{}}}})
	run(t, ctx, "login", chromedp.Navigate(w.url+"/login"), chromedp.SendKeys(chromedp.CSS("#token"), w.tokens["viewer"]),
		chromedp.Submit(chromedp.CSS("#token")), chromedp.WaitVisible(chromedp.CSS("table.envs")))
	for _, size := range []int{200, 1000} {
		name := fmt.Sprintf("big%d", size)
		var b strings.Builder
		fmt.Fprintf(&b, "apiVersion: knit.dev/v1\nkind: Environment\nmetadata: {name: %s}\nspec:\n  teamName: perf\n  envName: %s\n  autoApprove: true\n  components:\n", name, name)
		width := size / 20 // 20 layers, two dependencies each on the layer above
		for i := range size {
			fmt.Fprintf(&b, "    - name: c%04d\n      type: script\n      script: {apply: \"true\"}\n", i)
			if i >= width {
				layer := i/width - 1
				fmt.Fprintf(&b, "      dependsOn: [c%04d, c%04d]\n", layer*width+i%width, layer*width+(i+3)%width)
			}
		}
		w.apply(name, map[string]string{"env.yaml": b.String()})
		var total, draw, patch []float64
		for range 7 {
			run(t, ctx, "env page", chromedp.Navigate(w.url+"/env/perf/"+name))
			waitFor(t, ctx, "the graph", `document.querySelector("#graph[data-drawn]") !== null`)
			total = append(total, eval[float64](t, ctx, `window.knitGraphDrawnAt`))
			t.Logf("%d: %s", size, eval[string](t, ctx, `(() => { const n = performance.getEntriesByType("navigation")[0]; return "first byte " + Math.round(n.responseStart) + ", last byte " + Math.round(n.responseEnd) + ", interactive " + Math.round(n.domInteractive) + ", DOMContentLoaded " + Math.round(n.domContentLoadedEventStart) + "-" + Math.round(n.domContentLoadedEventEnd) + ", size " + n.transferSize; })()`))
			draw = append(draw, eval[float64](t, ctx, `Number(document.querySelector("#graph").dataset.drawMs)`))
			if n := eval[int](t, ctx, `document.querySelectorAll("#graph a.node").length`); n != size {
				t.Fatalf("the graph has %d nodes", n)
			}
			// A live refresh, as the server's change event brings it.
			_ = eval[int](t, ctx, `(() => { window.knitSettled = 0; document.addEventListener("htmx:afterSettle", () => window.knitSettled++); htmx.trigger(document.querySelector(".live"), "sse:changed"); return 0; })()`)
			waitFor(t, ctx, "a live refresh", `window.knitSettled > 0`)
			patch = append(patch, eval[float64](t, ctx, `Number(document.querySelector("#graph").dataset.drawMs)`))
		}
		slices.Sort(total)
		slices.Sort(draw)
		slices.Sort(patch)
		t.Logf("%d components: navigation to drawn graph %.0f ms (median of 7; min %.0f, max %.0f); drawing alone %.0f ms; a live refresh's patch %.0f ms",
			size, total[3], total[0], total[6], draw[3], patch[3])
	}
}
