package sqlite

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"knit.dev/knit/internal/store"
)

// envOrders are the ORDER BY clauses of the list's orders (columns
// prefixed with "e."); indexes on (status, id), (updated_at DESC, id) and
// the same after team serve them, so a page is read, not sorted.
var envOrders = map[store.EnvironmentOrder]string{
	store.ByID:      "e.id",
	store.ByStatus:  "e.status, e.id",
	store.ByUpdated: "e.updated_at DESC, e.id",
}

// environmentRowsQuery reads the page's IDs in order (the CTE: see
// environmentPageQuery), then joins each with what its row shows: lock,
// newest run, newest drift run and its components' statuses, component
// states counted by status, the applied revision's commit and the pending
// revision. The count comes first, so a page past the end still answers
// it (one row of NULLs).
var environmentRowsQuery = `WITH page AS (%s)
	SELECT t.n, e.id, e.team, e.name, e.metadata, e.revision, e.applied_revision, e.status, e.created_at, e.updated_at,
	l.run_id, ` + joinedRun("r") + `, ` + joinedRun("d") + `,
	(SELECT json_group_object(status, n) FROM (SELECT status, COUNT(*) AS n FROM component_states WHERE env = e.id GROUP BY status)),
	(SELECT json_group_object(component, status) FROM component_runs WHERE run_id = d.id),
	a.commit_hash,
	v.number, v.hash, v.source, v.created_at, v.root, v.commit_hash, v.author, v.message, v.errors
	FROM (SELECT COUNT(*) AS n FROM environments e%s) t
	LEFT JOIN page p ON 1
	LEFT JOIN environments e ON e.id = p.id
	LEFT JOIN locks l ON l.env = e.id
	LEFT JOIN runs r ON r.rowid = (SELECT rowid FROM runs WHERE env = e.id AND source <> 'preview' ORDER BY started_at DESC, rowid DESC LIMIT 1)
	LEFT JOIN runs d ON d.rowid = (SELECT rowid FROM runs WHERE env = e.id AND kind = 'drift' ORDER BY started_at DESC, rowid DESC LIMIT 1)
	LEFT JOIN revisions a ON a.env = e.id AND a.number = e.applied_revision
	LEFT JOIN revisions v ON v.env = e.id AND v.number = e.revision AND e.revision <> e.applied_revision
	ORDER BY %s`

// environmentPageQuery selects the IDs of f's page in its order. Limit
// and offset are parameters, so every page of a filter's shape shares one
// prepared statement.
func environmentPageQuery(f store.EnvironmentRowFilter) (string, []any, error) {
	order, ok := envOrders[f.Order]
	if !ok {
		return "", nil, fmt.Errorf("unknown order %q (id, status or updated)", f.Order)
	}
	pf := f.Filter
	if f.Order != store.ByID {
		pf.After = ""
	}
	where, args := environmentsWhere(pf, "e.")
	limit := f.Filter.Limit
	if limit <= 0 {
		limit = -1 // SQLite: no limit
	}
	return `SELECT e.id FROM environments e` + where + ` ORDER BY ` + order + ` LIMIT ? OFFSET ?`,
		append(args, limit, max(f.Offset, 0)), nil
}

// EnvironmentRows implements store.Store in one query.
func (s *Store) EnvironmentRows(ctx context.Context, f store.EnvironmentRowFilter) ([]store.EnvironmentRow, int, error) {
	page, args, err := environmentPageQuery(f)
	if err != nil {
		return nil, 0, fmt.Errorf("list environments: %w", err)
	}
	cf := f.Filter
	cf.After = ""
	countWhere, countArgs := environmentsWhere(cf, "e.")
	query := fmt.Sprintf(environmentRowsQuery, page, countWhere, envOrders[f.Order])
	rows, err := s.q.QueryContext(ctx, query, append(args, countArgs...)...)
	if err != nil {
		return nil, 0, fmt.Errorf("list environments: %w", err)
	}
	defer rows.Close()
	var out []store.EnvironmentRow
	total := 0
	for rows.Next() {
		row, err := scanEnvironmentRow(rows, &total)
		if err != nil {
			return nil, 0, fmt.Errorf("list environments: %w", err)
		}
		if row.ID != "" { // "": the page is empty
			out = append(out, row)
		}
	}
	if err := rows.Err(); err != nil {
		return nil, 0, fmt.Errorf("list environments: %w", err)
	}
	return out, total, nil
}

func scanEnvironmentRow(sc rowScanner, total *int) (store.EnvironmentRow, error) {
	var row store.EnvironmentRow
	var last, drift store.Run
	var pending store.Revision
	e := &row.Environment
	cols := append([]any{total, nullStr{&e.ID}, nullStr{&e.Team}, nullStr{&e.Name}, nullStr{&e.Metadata}, nullInt{&e.Revision},
		nullInt{&e.AppliedRevision}, nullStr{(*string)(&e.Status)}, timeCol{&e.CreatedAt}, timeCol{&e.UpdatedAt}, nullStr{&row.LockHolder}},
		joinedRunInto(&last)...)
	cols = append(cols, joinedRunInto(&drift)...)
	cols = append(cols, jsonCol{&row.Components}, jsonCol{&row.DriftStatuses}, nullStr{&row.AppliedCommit},
		nullInt{&pending.Number}, nullStr{&pending.Hash}, nullStr{&pending.Source}, timeCol{&pending.CreatedAt}, nullStr{&pending.Root},
		nullStr{&pending.Commit}, nullStr{&pending.Author}, nullStr{&pending.Message}, nullStr{&pending.Errors})
	if err := sc.Scan(cols...); err != nil {
		return row, err
	}
	if last.ID != "" {
		row.LastRun = &last
	}
	if drift.ID != "" {
		row.LastDrift = &drift
	}
	if len(row.Components) == 0 {
		row.Components = nil
	}
	if len(row.DriftStatuses) == 0 {
		row.DriftStatuses = nil
	}
	if pending.Number != 0 {
		pending.Env = e.ID
		row.Pending = &pending
	}
	return row, nil
}

// joinedRun is runColumns of the runs table as p, a LEFT JOIN's run.
func joinedRun(p string) string {
	cols := strings.Split(runColumns, ", ")
	for i, c := range cols {
		cols[i] = p + "." + c
	}
	return strings.Join(cols, ", ")
}

// joinedRunInto scans the columns of joinedRun into r, a missing run as
// the zero Run (a NULL policy leaves r.Policy nil).
func joinedRunInto(r *store.Run) []any {
	return []any{nullStr{&r.ID}, nullStr{&r.Env}, nullStr{(*string)(&r.Kind)}, nullInt{&r.Revision}, nullStr{(*string)(&r.Status)}, nullStr{&r.Actor},
		nullStr{&r.Reason}, nullStr{&r.Source}, nullStr{&r.Error}, nullInt{&r.PID}, timeCol{&r.StartedAt}, timeCol{&r.FinishedAt},
		nullStr{&r.SupersededBy}, (*[]byte)(&r.Policy)}
}

// jsonCol scans a JSON text column into v (a pointer); NULL leaves it alone.
type jsonCol struct{ v any }

// Scan implements sql.Scanner.
func (c jsonCol) Scan(src any) error {
	switch s := src.(type) {
	case nil:
		return nil
	case string:
		return json.Unmarshal([]byte(s), c.v)
	case []byte:
		return json.Unmarshal(s, c.v)
	}
	return fmt.Errorf("JSON column holds %T", src)
}
