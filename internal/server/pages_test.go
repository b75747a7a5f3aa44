package server_test

import (
	"context"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"testing"

	"knit.dev/knit/internal/controller"
	"knit.dev/knit/internal/server"
	"knit.dev/knit/internal/store"
	"knit.dev/knit/internal/store/sqlite"
)

// seedTeams puts n environments of each team into st, through the
// store's API, with a pending approval, a change set and an audit event
// each, made round-robin over the teams so that a page cut before the
// teams are filtered holds every team's.
func seedTeams(t *testing.T, st store.Store, teams []string, n int) {
	t.Helper()
	ctx := context.Background()
	spec := []byte(`{"apiVersion":"knit.dev/v1","kind":"Environment","metadata":{"name":"x"},"spec":{"components":[]}}`)
	for i := range n {
		for _, team := range teams {
			id := fmt.Sprintf("%s/env-%02d", team, i)
			if _, err := st.PutRevision(ctx, store.Environment{ID: id, Team: team, Name: fmt.Sprintf("env-%02d", i)}, store.Revision{Source: "seed", Spec: spec}); err != nil {
				t.Fatal(err)
			}
			a := &store.Approval{Env: id, Component: "db", RunID: "run-" + id, Revision: 1, Fingerprint: "fp", PlanChecksum: "sha256:abc", Plan: []byte(`{"add":1,"change":0,"destroy":0}`)}
			if err := st.CreateApproval(ctx, a); err != nil {
				t.Fatal(err)
			}
			cs := &store.ChangeSet{Env: id, RunID: "run-" + id, Revision: 1, Checksum: "sum-" + id,
				Components: []store.ChangeSetComponent{{Component: "db", ApprovalID: a.ID, PlanChecksum: a.PlanChecksum, Gated: true,
					Resources: []store.ChangeSetResource{{Address: "local_file.f", Action: "create"}}, Add: 1}}}
			if err := st.CreateChangeSet(ctx, cs); err != nil {
				t.Fatal(err)
			}
			if err := st.AppendAudit(ctx, store.AuditEvent{Env: id, Actor: "seed", Action: "apply"}); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// walk pages through a list endpoint as token, limit at a time, and
// returns each page's items' key (field ID or env), stopping at the page
// with no next. It fails on a page that names another team's record.
func (h *harness) walk(path, field, token string, limit int, teams ...string) [][]string {
	h.t.Helper()
	var pages [][]string
	cursor := ""
	for range 20 { // a guard: 180 records never take 20 pages of 50
		q := url.Values{"limit": {fmt.Sprint(limit)}}
		if cursor != "" {
			q.Set("cursor", cursor)
		}
		var p struct {
			Items []map[string]any
			Next  string
		}
		h.do(call{method: "GET", path: path + "?" + q.Encode(), token: token}, 200).decode(h.t, &p)
		var keys []string
		for _, it := range p.Items {
			key, _ := it[field].(string)
			team, _, _ := strings.Cut(key, "/")
			if !slices.Contains(teams, team) {
				h.t.Fatalf("%s as a token of %v lists %q", path, teams, key)
			}
			keys = append(keys, key)
		}
		pages = append(pages, keys)
		if p.Next == "" {
			return pages
		}
		cursor = p.Next
	}
	h.t.Fatalf("%s: no last page after 20", path)
	return nil
}

func sizes(pages [][]string) []int {
	out := make([]int, len(pages))
	for i, p := range pages {
		out[i] = len(p)
	}
	return out
}

// TestTeamTokenPagesAreFull: with 3 teams × 60 environments, a token of
// one team listing 50 at a time gets 50 of its own, then the other 10 and
// no further page; a token of two teams gets 50, 50, 20. So for
// environments, approvals and audit events (the lists with a cursor),
// and a change-set list's limit holds that many of the token's own: the
// store filters by the token's teams before it cuts the page.
func TestTeamTokenPagesAreFull(t *testing.T) {
	st, err := sqlite.Open(context.Background(), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	seedTeams(t, st, []string{"a", "b", "c"}, 60)
	h := newHarnessOn(t, server.Config{}, st, controller.Config{})
	one := h.token("a-watcher", "viewer", "a")
	two := h.token("ac-watcher", "viewer", "a", "c")

	for _, l := range []struct{ path, field string }{
		{"/api/v1/environments", "id"},
		{"/api/v1/approvals", "env"},
		{"/api/v1/audit", "env"},
	} {
		t.Run(strings.TrimPrefix(l.path, "/api/v1/"), func(t *testing.T) {
			h := h.in(t)
			for _, c := range []struct {
				token string
				teams []string
				want  []int
			}{{one, []string{"a"}, []int{50, 10}}, {two, []string{"a", "c"}, []int{50, 50, 20}}} {
				pages := h.walk(l.path, l.field, c.token, 50, c.teams...)
				if got := sizes(pages); !slices.Equal(got, c.want) {
					t.Errorf("a token of %v pages %s as %v, want %v", c.teams, l.path, got, c.want)
				}
				all := slices.Concat(pages...)
				slices.Sort(all)
				if n := len(slices.Compact(all)); n != 60*len(c.teams) {
					t.Errorf("a token of %v sees %d distinct records in %s, want %d", c.teams, n, l.path, 60*len(c.teams))
				}
			}
		})
	}

	var sets struct{ Items []struct{ Env string } }
	h.do(call{method: "GET", path: "/api/v1/change-sets?status=all&limit=50", token: one}, 200).decode(t, &sets)
	if len(sets.Items) != 50 {
		t.Errorf("a token of a asking for 50 change sets gets %d", len(sets.Items))
	}
	for _, cs := range sets.Items {
		if !strings.HasPrefix(cs.Env, "a/") {
			t.Fatalf("a token of a lists the change set of %s", cs.Env)
		}
	}
}
