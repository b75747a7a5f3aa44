package server_test

import (
	"bytes"
	"context"
	"regexp"
	"testing"

	"knit.dev/knit/internal/store/sqlite"
)

type envItem struct {
	ID, Team, Status string
	LastRun          *struct{ ID, Kind string }
}

// TestEnvironmentViewsFollowEveryWrite: the API serves an unchanged
// environment's views again from its cache, yet a write to anything they
// show, by this server or by another process sharing the data dir, is seen
// by the very next request; and a team's token never sees another team's
// environment that another token's request cached.
func TestEnvironmentViewsFollowEveryWrite(t *testing.T) {
	h := newHarness(t)
	admin := h.token("admin", "admin")
	h.seed("web", "shop", envOpts{}, "alice")
	h.seed("data", "lake", envOpts{}, "alice")

	get := func(path, token string) []byte { return h.do(call{method: "GET", path: path, token: token}, 200).body }
	one := func() envItem {
		var e envItem
		h.do(call{method: "GET", path: "/api/v1/environments/web/shop", token: admin}, 200).decode(t, &e)
		return e
	}
	list := func(token string) map[string]envItem {
		var p struct{ Items []envItem }
		h.do(call{method: "GET", path: "/api/v1/environments", token: token}, 200).decode(t, &p)
		out := map[string]envItem{}
		for _, e := range p.Items {
			out[e.ID] = e
		}
		return out
	}
	if a, b := get("/api/v1/environments/web/shop", admin), get("/api/v1/environments/web/shop", admin); !bytes.Equal(a, b) {
		t.Fatalf("an unchanged environment read twice differs:\n%s\n%s", a, b)
	}
	if a, b := get("/api/v1/environments", admin), get("/api/v1/environments", admin); !bytes.Equal(a, b) {
		t.Fatalf("an unchanged list read twice differs:\n%s\n%s", a, b)
	}

	// Another process: its own store handle on the same data dir.
	st, err := sqlite.Open(context.Background(), h.dir)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if err := st.SetEnvironmentStatus(context.Background(), "web/shop", "failed"); err != nil {
		t.Fatal(err)
	}
	if got := one().Status; got != "failed" {
		t.Errorf("after another process's write, GET web/shop says status %q, want failed", got)
	}
	if got := list(admin)["web/shop"].Status; got != "failed" {
		t.Errorf("after another process's write, the list says web/shop is %q, want failed", got)
	}

	// This server's own run.
	var acc struct{ RunID string }
	h.do(call{method: "POST", path: "/api/v1/environments/web/shop/runs", token: admin, body: map[string]any{"kind": "drift"}}, 202).decode(t, &acc)
	h.waitRun(acc.RunID, admin)
	if r := one().LastRun; r == nil || r.ID != acc.RunID {
		t.Errorf("after run %s, GET web/shop's last run is %+v", acc.RunID, r)
	}
	if r := list(admin)["web/shop"].LastRun; r == nil || r.ID != acc.RunID {
		t.Errorf("after run %s, the list's last run of web/shop is %+v", acc.RunID, r)
	}

	// Both environments' summaries are cached now; a web token sees one.
	viewer := h.token("web-viewer", "viewer", "web")
	if got := list(viewer); len(got) != 1 || got["web/shop"].ID == "" {
		t.Errorf("a web token lists %v, want web/shop alone", got)
	}
	h.do(call{method: "GET", path: "/api/v1/environments/data/lake", token: viewer}, 403)

	// /metrics tells hits from misses.
	m := string(get("/metrics", admin))
	for _, view := range []string{"summary", "detail"} {
		for _, result := range []string{"hit", "miss"} {
			re := regexp.MustCompile(`(?m)^knit_view_cache_lookups_total\{result="` + result + `",view="` + view + `"\} [1-9]`)
			if !re.MatchString(m) {
				t.Errorf("/metrics has no %s %ss of the view cache:\n%s", view, result, m)
			}
		}
	}
}
