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
// navigation to a drawn graph in Chromium for a 200-component environment
// (applied with the fake runner), median of 7 loads. It asserts nothing.
func TestGraphDrawTime(t *testing.T) {
	if os.Getenv("KNIT_WEB_BENCH") != "1" {
		t.Skip("set KNIT_WEB_BENCH=1 to measure the graph's drawing time")
	}
	ctx := browser(t)
	w := newWorld(t, adapters.Config{Config: knit.Config{Runners: map[string]runner.Runner{spec.TypeScript: &fake.Runner{}}}})
	var b strings.Builder
	b.WriteString("apiVersion: knit.dev/v1\nkind: Environment\nmetadata: {name: big}\nspec:\n  teamName: perf\n  envName: big\n  autoApprove: true\n  components:\n")
	for i := range 200 {
		fmt.Fprintf(&b, "    - name: c%03d\n      type: script\n      script: {apply: \"true\"}\n", i)
		if i >= 10 { // 20 layers of 10, two dependencies each on the layer above
			layer := i/10 - 1
			fmt.Fprintf(&b, "      dependsOn: [c%03d, c%03d]\n", layer*10+i%10, layer*10+(i+3)%10)
		}
	}
	w.apply("big", map[string]string{"env.yaml": b.String()})
	run(t, ctx, "login", chromedp.Navigate(w.url+"/login"), chromedp.SendKeys(chromedp.CSS("#token"), w.tokens["viewer"]),
		chromedp.Submit(chromedp.CSS("#token")), chromedp.WaitVisible(chromedp.CSS("table.envs")))
	var total, draw []float64
	for range 7 {
		run(t, ctx, "env page", chromedp.Navigate(w.url+"/env/perf/big"))
		waitFor(t, ctx, "the graph", `document.querySelector("#graph[data-drawn]") !== null`)
		total = append(total, eval[float64](t, ctx, `window.knitGraphDrawnAt`))
		draw = append(draw, eval[float64](t, ctx, `Number(document.querySelector("#graph").dataset.drawMs)`))
		if n := eval[int](t, ctx, `document.querySelectorAll("#graph a.node").length`); n != 200 {
			t.Fatalf("the graph has %d nodes", n)
		}
	}
	slices.Sort(total)
	slices.Sort(draw)
	t.Logf("200 components: navigation to drawn graph %.0f ms (median of 7; min %.0f, max %.0f); layout and drawing alone %.0f ms",
		total[3], total[0], total[6], draw[3])
}
