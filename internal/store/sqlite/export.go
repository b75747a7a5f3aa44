package sqlite

import (
	"context"
	"fmt"
	"slices"
	"time"
)

// Tables are the tables Export reads, in an order that satisfies their
// foreign keys: what `knit store migrate` copies to another store. Locks
// and the outputs (read decrypted through ComponentStates) are left out.
var Tables = []string{"environments", "revisions", "runs", "component_runs", "component_states", "approvals",
	"change_sets", "audit_events", "tokens", "settings", "tool_processes", "notification_outbox", "notification_seqs",
	"environment_expiries", "previews",
	"pipelines", "pipeline_releases", "pipeline_stages", "pipeline_history", "pipeline_approvals", "pipeline_stage_files", "rollouts",
	"set_rollouts"}

// Export reads every row of table, in the order they were written, as
// stored: times as text (see ts), blobs as []byte, integers as int64, NULL
// as nil. fn gets the column names and one row's values (reused between
// calls). It is for copying the store elsewhere; table must be one of
// Tables.
func (s *Store) Export(ctx context.Context, table string, fn func(cols []string, vals []any) error) error {
	if !slices.Contains(Tables, table) {
		return fmt.Errorf("export: %s is not a table of the store", table)
	}
	rows, err := s.db.QueryContext(ctx, `SELECT * FROM `+table+` ORDER BY rowid`)
	if err != nil {
		return fmt.Errorf("export %s: %w", table, err)
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		return err
	}
	vals := make([]any, len(cols))
	ptrs := make([]any, len(cols))
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	for rows.Next() {
		if err := rows.Scan(ptrs...); err != nil {
			return fmt.Errorf("export %s: %w", table, err)
		}
		if err := fn(cols, vals); err != nil {
			return err
		}
	}
	return rows.Err()
}

// Count is the number of rows of table (one of Tables).
func (s *Store) Count(ctx context.Context, table string) (int64, error) {
	if !slices.Contains(Tables, table) {
		return 0, fmt.Errorf("count: %s is not a table of the store", table)
	}
	var n int64
	if err := s.db.QueryRowContext(ctx, `SELECT COUNT(*) FROM `+table).Scan(&n); err != nil {
		return 0, fmt.Errorf("count %s: %w", table, err)
	}
	return n, nil
}

// SchemaVersion is the store's schema version: its latest migration.
func (s *Store) SchemaVersion(ctx context.Context) (int, error) {
	return schemaVersion(ctx, s.db)
}

// ParseTime reads a time column as Export returns it.
func (s *Store) ParseTime(v string) (time.Time, error) { return parseTime(v) }

// TFStateKeys lists the keys of the Terraform states the store holds, for
// copying them (decrypted through TFState) to another store.
func (s *Store) TFStateKeys(ctx context.Context) ([]string, error) {
	return queryList[string](ctx, s, `SELECT key FROM tf_states WHERE data IS NOT NULL ORDER BY key`)
}

// SavedPlanIDs lists the approvals whose saved plans the store holds, for
// copying them (decrypted through SavedPlan) to another store.
func (s *Store) SavedPlanIDs(ctx context.Context) ([]int64, error) {
	return queryList[int64](ctx, s, `SELECT approval_id FROM saved_plans ORDER BY approval_id`)
}

func queryList[T any](ctx context.Context, s *Store, query string) ([]T, error) {
	rows, err := s.db.QueryContext(ctx, query)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var list []T
	for rows.Next() {
		var v T
		if err := rows.Scan(&v); err != nil {
			return nil, err
		}
		list = append(list, v)
	}
	return list, rows.Err()
}
