package postgres

import (
	"strings"
	"testing"

	"knit.dev/knit/internal/store"
	"knit.dev/knit/internal/testtools/pgtest"
)

// TestEnvironmentListPagesUseIndexes: a page of the environments list, in
// each order, is read from an index in that order, not sorted from every
// environment (the plans of the SQLite store's TestPagingQueriesUseIndexes).
// Sequential and bitmap scans and sorts are priced out, so the plan shows
// whether an index can serve the order: without one PostgreSQL still sorts.
func TestEnvironmentListPagesUseIndexes(t *testing.T) {
	c := pgtest.Start(t)
	s, err := Open(t.Context(), c.DB(t), make([]byte, 32))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for name, tc := range map[string]struct {
		f     store.EnvironmentRowFilter
		index string // "": any index on environments
	}{
		"by ID": {store.EnvironmentRowFilter{Filter: store.EnvironmentFilter{After: "t/x", Limit: 50}}, ""},
		"by status, late page": {store.EnvironmentRowFilter{Order: store.ByStatus, Offset: 5000,
			Filter: store.EnvironmentFilter{Limit: 50}}, "environments_status"},
		"by last change, late page": {store.EnvironmentRowFilter{Order: store.ByUpdated, Offset: 5000,
			Filter: store.EnvironmentFilter{Limit: 50}}, "environments_updated"},
		"of a team by last change": {store.EnvironmentRowFilter{Order: store.ByUpdated,
			Filter: store.EnvironmentFilter{Team: "t", Limit: 50}}, "environments_team_updated"},
		"of a team and status by status": {store.EnvironmentRowFilter{Order: store.ByStatus,
			Filter: store.EnvironmentFilter{Team: "t", Status: "failed", Limit: 50}}, "environments_team_status"},
	} {
		t.Run(name, func(t *testing.T) {
			a := &args{}
			q, err := environmentPageQuery(a, tc.f)
			if err != nil {
				t.Fatal(err)
			}
			tx, err := s.pool.Begin(t.Context())
			if err != nil {
				t.Fatal(err)
			}
			defer tx.Rollback(t.Context())
			for _, off := range []string{"enable_seqscan", "enable_bitmapscan", "enable_sort"} {
				if _, err := tx.Exec(t.Context(), `SET LOCAL `+off+` = off`); err != nil {
					t.Fatal(err)
				}
			}
			rows, err := tx.Query(t.Context(), `EXPLAIN `+q, a.vals...)
			if err != nil {
				t.Fatal(err)
			}
			var plan []string
			for rows.Next() {
				var line string
				if err := rows.Scan(&line); err != nil {
					t.Fatal(err)
				}
				plan = append(plan, line)
			}
			if err := rows.Err(); err != nil {
				t.Fatal(err)
			}
			p := strings.Join(plan, "\n")
			if !strings.Contains(p, " using "+tc.index) || strings.Contains(p, "Sort") {
				t.Errorf("the page is not read from %s in order:\n%s\n%s", tc.index, q, p)
			}
		})
	}
}

// TestSettingsByPrefixUseTheBytesIndex: GitOps's reads of settings by
// prefix are a range of settings_key_bytes, whatever the database's
// collation (scans priced out, as above).
func TestSettingsByPrefixUseTheBytesIndex(t *testing.T) {
	c := pgtest.Start(t)
	s, err := Open(t.Context(), c.DB(t), make([]byte, 32))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	tx, err := s.pool.Begin(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(t.Context())
	for _, off := range []string{"enable_seqscan", "enable_bitmapscan"} {
		if _, err := tx.Exec(t.Context(), `SET LOCAL `+off+` = off`); err != nil {
			t.Fatal(err)
		}
	}
	rows, err := tx.Query(t.Context(), `EXPLAIN `+settingsRangeQuery, "git.env:", "git.env;")
	if err != nil {
		t.Fatal(err)
	}
	var plan []string
	for rows.Next() {
		var line string
		if err := rows.Scan(&line); err != nil {
			t.Fatal(err)
		}
		plan = append(plan, line)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if p := strings.Join(plan, "\n"); !strings.Contains(p, "settings_key_bytes") || !strings.Contains(p, "Index Cond") {
		t.Errorf("settings by prefix are not a range of settings_key_bytes:\n%s", p)
	}
}
