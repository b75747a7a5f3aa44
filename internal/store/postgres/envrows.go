package postgres

import (
	"context"
	"fmt"

	"knit.dev/knit/internal/store"
)

// envOrders are the ORDER BY clauses of the list's orders (columns
// prefixed with "e."); indexes on (status, id), (updated_at DESC NULLS
// LAST, id) and the same after team serve them, so a page is read, not
// sorted. A missing updated_at sorts last, as in the SQLite store.
var envOrders = map[store.EnvironmentOrder]string{
	store.ByID:      "e.id",
	store.ByStatus:  "e.status, e.id",
	store.ByUpdated: "e.updated_at DESC NULLS LAST, e.id",
}

// environmentRowsQuery reads the page's IDs in order (the CTE: see
// environmentPageQuery), then joins each with what its row shows: lock,
// newest run, newest drift run and its components' statuses, component
// states counted by status, the applied revision's commit and the pending
// revision. The count comes first, so a page past the end still answers
// it (one row of NULLs, read as zeros).
var environmentRowsQuery = `WITH page AS (%s)
	SELECT t.n, COALESCE(e.id, ''), COALESCE(e.team, ''), COALESCE(e.name, ''), COALESCE(e.metadata, ''),
	COALESCE(e.revision, 0), COALESCE(e.applied_revision, 0), COALESCE(e.status, ''), e.created_at, e.updated_at,
	COALESCE(l.run_id, ''), ` + fmt.Sprintf(runJoinColumns, "r") + `, ` + fmt.Sprintf(runJoinColumns, "d") + `,
	(SELECT jsonb_object_agg(status, n) FROM (SELECT status, COUNT(*) AS n FROM component_states WHERE env = e.id GROUP BY status) c),
	(SELECT jsonb_object_agg(component, status ORDER BY id) FROM component_runs WHERE run_id = d.id),
	COALESCE(a.commit_hash, ''),
	COALESCE(v.number, 0), COALESCE(v.hash, ''), COALESCE(v.source, ''), v.created_at, COALESCE(v.root, ''),
	COALESCE(v.commit_hash, ''), COALESCE(v.author, ''), COALESCE(v.message, ''), COALESCE(v.errors, '')
	FROM (SELECT COUNT(*) AS n FROM environments e%s) t
	LEFT JOIN page p ON TRUE
	LEFT JOIN environments e ON e.id = p.id
	LEFT JOIN locks l ON l.env = e.id
	` + lastRunJoin + `
	LEFT JOIN LATERAL (SELECT * FROM runs WHERE env = e.id AND kind = 'drift'` + newestFirst + ` LIMIT 1) d ON TRUE
	LEFT JOIN revisions a ON a.env = e.id AND a.number = e.applied_revision
	LEFT JOIN revisions v ON v.env = e.id AND v.number = e.revision AND e.revision <> e.applied_revision
	ORDER BY %s`

// environmentPageQuery selects the IDs of f's page in its order, adding
// its parameters to a. Limit and offset are parameters, so every page of
// a filter's shape shares one prepared statement.
func environmentPageQuery(a *args, f store.EnvironmentRowFilter) (string, error) {
	order, ok := envOrders[f.Order]
	if !ok {
		return "", fmt.Errorf("unknown order %q (id, status or updated)", f.Order)
	}
	pf := f.Filter
	if f.Order != store.ByID {
		pf.After = ""
	}
	environmentsWhereIn(a, pf, "e.")
	var limit *int64 // NULL: no limit
	if f.Filter.Limit > 0 {
		n := int64(f.Filter.Limit)
		limit = &n
	}
	a.vals = append(a.vals, limit, int64(max(f.Offset, 0)))
	return fmt.Sprintf(`SELECT e.id FROM environments e%s ORDER BY %s LIMIT $%d OFFSET $%d`,
		a.clause(), order, len(a.vals)-1, len(a.vals)), nil
}

// EnvironmentRows implements store.Store in one query.
func (s *Store) EnvironmentRows(ctx context.Context, f store.EnvironmentRowFilter) ([]store.EnvironmentRow, int, error) {
	pa := &args{}
	page, err := environmentPageQuery(pa, f)
	if err != nil {
		return nil, 0, fmt.Errorf("list environments: %w", err)
	}
	cf := f.Filter
	cf.After = ""
	ca := environmentsWhereIn(&args{vals: pa.vals}, cf, "e.") // numbered after the page's
	query := fmt.Sprintf(environmentRowsQuery, page, ca.clause(), envOrders[f.Order])
	rows, err := s.pool.Query(ctx, query, ca.vals...)
	if err != nil {
		return nil, 0, fmt.Errorf("list environments: %w", err)
	}
	defer rows.Close()
	var out []store.EnvironmentRow
	total := 0
	for rows.Next() {
		var row store.EnvironmentRow
		var last, drift store.Run
		var pending store.Revision
		e := &row.Environment
		cols := append([]any{&total, &e.ID, &e.Team, &e.Name, &e.Metadata, &e.Revision, &e.AppliedRevision, &e.Status,
			timeCol{&e.CreatedAt}, timeCol{&e.UpdatedAt}, &row.LockHolder}, runJoinTargets(&last)...)
		cols = append(cols, runJoinTargets(&drift)...)
		cols = append(cols, &row.Components, &row.DriftStatuses, &row.AppliedCommit,
			&pending.Number, &pending.Hash, &pending.Source, timeCol{&pending.CreatedAt}, &pending.Root,
			&pending.Commit, &pending.Author, &pending.Message, &pending.Errors)
		if err := rows.Scan(cols...); err != nil {
			return nil, 0, fmt.Errorf("list environments: %w", err)
		}
		if e.ID == "" {
			continue // the page is empty
		}
		if last.ID != "" {
			row.LastRun = &last
		}
		if drift.ID != "" {
			row.LastDrift = &drift
		}
		if pending.Number != 0 {
			pending.Env = e.ID
			row.Pending = &pending
		}
		out = append(out, row)
	}
	if err := rows.Err(); err != nil {
		return nil, 0, fmt.Errorf("list environments: %w", err)
	}
	return out, total, nil
}
