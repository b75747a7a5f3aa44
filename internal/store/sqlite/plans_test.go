package sqlite

import (
	"strings"
	"testing"

	"knit.dev/knit/internal/store"
)

// queryPlan is SQLite's plan for query, one line per step.
func queryPlan(t *testing.T, s *Store, query string, args ...any) string {
	t.Helper()
	tx, err := s.db.BeginTx(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	rows, err := tx.Query(`EXPLAIN QUERY PLAN `+query, args...)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var steps []string
	for rows.Next() {
		var id, parent, unused int
		var detail string
		if err := rows.Scan(&id, &parent, &unused, &detail); err != nil {
			t.Fatal(err)
		}
		steps = append(steps, detail)
	}
	return strings.Join(steps, "\n")
}

// TestPagingQueriesUseIndexes: every page the API and UI read (10,000
// environments, years of runs and audit events) is found through an index
// and needs no sort, so its cost does not grow with the table.
func TestPagingQueriesUseIndexes(t *testing.T) {
	s := openT(t, t.TempDir())
	if err := s.CreateRun(t.Context(), store.Run{ID: "cursor", Env: "team/web"}); err != nil {
		t.Fatal(err)
	}
	runs := func(env string, f store.RunFilter) (string, []any) {
		t.Helper()
		tx, err := s.db.BeginTx(t.Context(), nil)
		if err != nil {
			t.Fatal(err)
		}
		defer tx.Rollback()
		q, args, err := runsQuery(t.Context(), &txn{Tx: tx, q: s.q}, env, f)
		if err != nil {
			t.Fatal(err)
		}
		return q, args
	}
	for name, tc := range map[string]struct {
		query func() (string, []any)
		index string
	}{
		"environments by team":   {func() (string, []any) { return environmentsQuery(store.EnvironmentFilter{Team: "t", Limit: 50}) }, "environments_team"},
		"environments by status": {func() (string, []any) { return environmentsQuery(store.EnvironmentFilter{Status: "failed", Limit: 50}) }, "environments_status"},
		"environments by team and status": {func() (string, []any) {
			return environmentsQuery(store.EnvironmentFilter{Team: "t", Status: "failed", After: "t/x", Limit: 50})
		}, "environments_team_status"},
		"environments after":             {func() (string, []any) { return environmentsQuery(store.EnvironmentFilter{After: "t/x", Limit: 50}) }, "sqlite_autoindex_environments_1"},
		"runs of an environment":         {func() (string, []any) { return runs("team/web", store.RunFilter{Limit: 20}) }, "runs_env_started"},
		"runs of an environment, before": {func() (string, []any) { return runs("team/web", store.RunFilter{Before: "cursor", Limit: 20}) }, "runs_env_started"},
		"runs of every environment":      {func() (string, []any) { return runs("", store.RunFilter{Before: "cursor", Limit: 20}) }, "runs_started"},
		"audit of an environment":        {func() (string, []any) { return auditQuery(store.AuditFilter{Env: "team/web", After: 10, Limit: 50}) }, "audit_events_env"},
		"audit of an actor":              {func() (string, []any) { return auditQuery(store.AuditFilter{Actor: "alice", After: 10, Limit: 50}) }, "audit_events_actor"},
		"latest component runs":          {func() (string, []any) { return latestComponentRunsQuery, []any{"team/web"} }, "COVERING INDEX component_runs_env_component"},
		"environment summaries after": {func() (string, []any) {
			return environmentSummariesQuery(store.EnvironmentFilter{After: "t/x", Limit: 50})
		}, "sqlite_autoindex_environments_1"},
		"environment summaries by team and status": {func() (string, []any) {
			return environmentSummariesQuery(store.EnvironmentFilter{Team: "t", Status: "failed", After: "t/x", Limit: 50})
		}, "environments_team_status"},
		"environments list by status, late page": {func() (string, []any) {
			return pageQuery(t, store.EnvironmentRowFilter{Order: store.ByStatus, Offset: 5000, Filter: store.EnvironmentFilter{Limit: 50}})
		}, "environments_status"},
		"environments list by last change, late page": {func() (string, []any) {
			return pageQuery(t, store.EnvironmentRowFilter{Order: store.ByUpdated, Offset: 5000, Filter: store.EnvironmentFilter{Limit: 50}})
		}, "environments_updated"},
		"environments list of a team by last change": {func() (string, []any) {
			return pageQuery(t, store.EnvironmentRowFilter{Order: store.ByUpdated, Filter: store.EnvironmentFilter{Team: "t", Limit: 50}})
		}, "environments_team_updated"},
		"environments list of a team and status by status": {func() (string, []any) {
			return pageQuery(t, store.EnvironmentRowFilter{Order: store.ByStatus, Filter: store.EnvironmentFilter{Team: "t", Status: "failed", Limit: 50}})
		}, "environments_team_status"},
		// Every run asks whether runs of its environment wait to be superseded.
		"an environment's waiting runs": {func() (string, []any) { return supersedableQuery, []any{"team/web", "awaiting", "x"} }, "USING INDEX runs_env"},
		// GitOps reads its wants and bookkeeping by prefix at every commit.
		"settings by prefix": {func() (string, []any) { return settingsRangeQuery, []any{"git.env:", "git.env;"} },
			"SEARCH settings USING INDEX sqlite_autoindex_settings_1 (key>? AND key<?)"},
		"an environment's last drift": {func() (string, []any) { return detailQuery, []any{"team/web"} }, "runs_env_kind_started"},
		// Its newest component run outside previews: walked down the index
		// from the newest, reading each run's run_id (not covering).
		"an environment's components": {func() (string, []any) { return detailComponentsQuery, []any{"team/web"} }, "USING INDEX component_runs_env_component (env=? AND component=?)"},
	} {
		t.Run(name, func(t *testing.T) {
			q, args := tc.query()
			plan := queryPlan(t, s, q, args...)
			if !strings.Contains(plan, tc.index) {
				t.Errorf("plan does not use %s:\n%s", tc.index, plan)
			}
			// Sorting a handful of latest component runs by name is fine;
			// sorting a page of a large table is not.
			if strings.Contains(plan, "TEMP B-TREE") && name != "latest component runs" {
				t.Errorf("plan sorts:\n%s", plan)
			}
			if strings.Contains(plan, "SCAN") && !strings.Contains(plan, "USING") {
				t.Errorf("plan scans a table without an index:\n%s", plan)
			}
		})
	}
}

// pageQuery is the query of a page of the environments list.
func pageQuery(t *testing.T, f store.EnvironmentRowFilter) (string, []any) {
	t.Helper()
	q, args, err := environmentPageQuery(f)
	if err != nil {
		t.Fatal(err)
	}
	return q, args
}
