package web_test

import (
	"context"
	"fmt"
	"html"
	"regexp"
	"slices"
	"strings"
	"testing"

	"knit.dev/knit/internal/adapters"
	"knit.dev/knit/internal/knit"
	"knit.dev/knit/internal/store"
	"knit.dev/knit/internal/store/sqlite"
)

var (
	envRowLink = regexp.MustCompile(`<td><a href="/env/([^"]+)">`)
	nextLink   = regexp.MustCompile(`<a href="([^"]+)" rel="next">`)
)

// TestTeamTokenDashboardPagesAreFull: with 3 teams × 60 environments, the
// dashboard's list shows a token of one team 50 of its own, then the
// other 10 and no next page; a token of two teams 50, 50, 20; in name
// order (a cursor) and sorted by last change (numbered pages) alike.
func TestTeamTokenDashboardPagesAreFull(t *testing.T) {
	st, err := sqlite.Open(context.Background(), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	ctx := context.Background()
	spec := []byte(`{"apiVersion":"knit.dev/v1","kind":"Environment","metadata":{"name":"x"},"spec":{"components":[]}}`)
	for i := range 60 {
		for _, team := range []string{"a", "b", "c"} {
			name := fmt.Sprintf("env-%02d", i)
			if _, err := st.PutRevision(ctx, store.Environment{ID: team + "/" + name, Team: team, Name: name}, store.Revision{Source: "seed", Spec: spec}); err != nil {
				t.Fatal(err)
			}
		}
	}
	w := newWorld(t, adapters.Config{Config: knit.Config{Store: st}})
	for name, teams := range map[string][]string{"a-viewer": {"a"}, "ac-viewer": {"a", "c"}} {
		secret, _, err := knit.NewCreateToken(w.k, name, store.RoleViewer, teams, "test").Run(ctx)
		if err != nil {
			t.Fatal(err)
		}
		w.tokens[name] = secret
	}
	for _, c := range []struct {
		role  string
		teams []string
		want  []int
	}{{"a-viewer", []string{"a"}, []int{50, 10}}, {"ac-viewer", []string{"a", "c"}, []int{50, 50, 20}}} {
		client := w.client(c.role)
		for _, start := range []string{"/", "/?sort=updated"} {
			var sizes []int
			var all []string
			for u := start; u != ""; {
				if len(sizes) == 10 {
					t.Fatalf("%s from %s: no last page after 10", c.role, start)
				}
				code, body := get(t, client, w.url+u)
				if code != 200 {
					t.Fatalf("%s GET %s: %d", c.role, u, code)
				}
				var ids []string
				for _, m := range envRowLink.FindAllStringSubmatch(body, -1) {
					team, _, _ := strings.Cut(m[1], "/")
					if !slices.Contains(c.teams, team) {
						t.Fatalf("%s GET %s lists %s", c.role, u, m[1])
					}
					ids = append(ids, m[1])
				}
				sizes, all = append(sizes, len(ids)), append(all, ids...)
				u = ""
				if m := nextLink.FindStringSubmatch(body); m != nil {
					u = html.UnescapeString(m[1])
				}
			}
			if !slices.Equal(sizes, c.want) {
				t.Errorf("%s pages %s as %v, want %v", c.role, start, sizes, c.want)
			}
			slices.Sort(all)
			if n := len(slices.Compact(all)); n != 60*len(c.teams) {
				t.Errorf("%s from %s sees %d distinct environments, want %d", c.role, start, n, 60*len(c.teams))
			}
		}
	}
}
