package postgres

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"knit.dev/knit/internal/store"
)

// Source is a store being copied into this one (`knit store migrate`): the
// SQLite store, read table by table as stored. Its tables have the columns
// of this store's (the migrations mirror each other), its times are text
// that ParseTime reads, and its sensitive outputs come decrypted from
// ComponentStates, to be sealed again under this store's key.
type Source interface {
	SchemaVersion(ctx context.Context) (int, error)
	Export(ctx context.Context, table string, fn func(cols []string, vals []any) error) error
	Count(ctx context.Context, table string) (int64, error)
	ComponentStates(ctx context.Context, env string) (map[string]store.ComponentState, error)
	ParseTime(s string) (time.Time, error)
	// Terraform state and saved plans come decrypted, to be sealed again.
	TFStateKeys(ctx context.Context) ([]string, error)
	TFState(ctx context.Context, key string) ([]byte, store.TFLock, error)
	SavedPlanIDs(ctx context.Context) ([]int64, error)
	SavedPlan(ctx context.Context, id int64) ([]byte, error)
}

// Import copies every table of src named in tables (in that order, which
// satisfies the foreign keys), then each component's outputs, in one
// transaction, and checks that every table holds as many rows as src's
// (and outputs as many as src's states have): anything else rolls the copy
// back; every other table is Skipped, knowingly. It refuses a store that
// already has environments, runs or tokens:
// the copy is of a whole store into a new one. It returns the rows copied
// by table. src must not change meanwhile (stop knit first).
func (s *Store) Import(ctx context.Context, src Source, tables []string) (map[string]int64, error) {
	v, err := src.SchemaVersion(ctx)
	if err != nil {
		return nil, err
	}
	if v != Migrations() {
		return nil, fmt.Errorf("the SQLite store is at schema version %d, this knit's PostgreSQL store at %d: open the SQLite store with this knit first (it migrates it), or use the knit that wrote it", v, Migrations())
	}
	counts := map[string]int64{}
	err = pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if err := refuseNonEmpty(ctx, tx); err != nil {
			return err
		}
		for _, table := range tables {
			n, err := copyTable(ctx, tx, src, table)
			if err != nil {
				return err
			}
			if err := checkCount(ctx, tx, src, table, n); err != nil {
				return err
			}
			counts[table] = n
		}
		n, err := s.copyOutputs(ctx, tx, src)
		counts["outputs"] = n
		if err != nil {
			return err
		}
		if counts["tf_states"], err = s.copyTFStates(ctx, tx, src); err != nil {
			return err
		}
		if counts["saved_plans"], err = s.copySavedPlans(ctx, tx, src); err != nil {
			return err
		}
		if err := accountFor(ctx, tx, counts); err != nil {
			return err
		}
		return resetIdentities(ctx, tx)
	})
	if err != nil {
		return nil, fmt.Errorf("copy the store into PostgreSQL (nothing was copied): %w", err)
	}
	return counts, nil
}

// refuseNonEmpty fails unless the store is new.
func refuseNonEmpty(ctx context.Context, tx pgx.Tx) error {
	var n int64
	err := tx.QueryRow(ctx, `SELECT (SELECT COUNT(*) FROM environments) + (SELECT COUNT(*) FROM runs) + (SELECT COUNT(*) FROM tokens)`).Scan(&n)
	if err != nil {
		return err
	}
	if n > 0 {
		return errors.New("the PostgreSQL store already holds records: migrate into a new, empty database")
	}
	return nil
}

// copyTable copies src's table with COPY, times turned from text into
// nanoseconds and SQLite's 0 and 1 into the booleans of BOOLEAN columns.
func copyTable(ctx context.Context, tx pgx.Tx, src Source, table string) (int64, error) {
	bools, err := booleanColumns(ctx, tx, table)
	if err != nil {
		return 0, err
	}
	var cols []string
	var rows [][]any
	err = src.Export(ctx, table, func(c []string, vals []any) error {
		cols = c
		row := make([]any, len(vals))
		for i, v := range vals {
			if n, ok := v.(int64); ok && bools[c[i]] {
				v = n != 0
			}
			if isTimeColumn(c[i]) && v != nil {
				s, ok := v.(string)
				if !ok {
					return fmt.Errorf("%s.%s holds %T, want a time as text", table, c[i], v)
				}
				t, err := src.ParseTime(s)
				if err != nil {
					return fmt.Errorf("%s.%s: %w", table, c[i], err)
				}
				v = t.UnixNano()
			}
			if b, ok := v.([]byte); ok && b == nil {
				v = []byte{} // an empty blob (x''), not NULL
			}
			row[i] = v
		}
		rows = append(rows, row)
		return nil
	})
	if err != nil || len(rows) == 0 {
		return 0, err
	}
	n, err := tx.CopyFrom(ctx, pgx.Identifier{table}, cols, pgx.CopyFromRows(rows))
	if err != nil {
		return 0, fmt.Errorf("copy %s: %w", table, err)
	}
	return n, nil
}

// booleanColumns are the columns of table that are BOOLEAN here (SQLite
// keeps them as INTEGER).
func booleanColumns(ctx context.Context, tx pgx.Tx, table string) (map[string]bool, error) {
	names, err := queryAll(ctx, tx, "columns of "+table, func(row pgx.Row) (string, error) {
		var name string
		err := row.Scan(&name)
		return name, err
	}, `SELECT column_name FROM information_schema.columns
		WHERE table_schema = current_schema() AND table_name = $1 AND data_type = 'boolean'`, table)
	if err != nil {
		return nil, err
	}
	out := map[string]bool{}
	for _, n := range names {
		out[n] = true
	}
	return out, nil
}

// isTimeColumn reports whether a column holds a time (knit names them so;
// environment_expiries.warned_for is the expiry a warning went out for).
func isTimeColumn(col string) bool {
	return strings.HasSuffix(col, "_at") || col == "time" || col == "warned_for"
}

// checkCount fails unless table holds as many rows as src's.
func checkCount(ctx context.Context, tx pgx.Tx, src Source, table string, copied int64) error {
	want, err := src.Count(ctx, table)
	if err != nil {
		return err
	}
	var got int64
	if err := tx.QueryRow(ctx, `SELECT COUNT(*) FROM `+pgx.Identifier{table}.Sanitize()).Scan(&got); err != nil {
		return err
	}
	if got != want || copied != want {
		return fmt.Errorf("%s: the SQLite store has %d rows, %d were copied and PostgreSQL holds %d", table, want, copied, got)
	}
	return nil
}

// copyOutputs writes every component's outputs, sealing sensitive ones
// under this store's key.
func (s *Store) copyOutputs(ctx context.Context, tx pgx.Tx, src Source) (int64, error) {
	envs, err := queryAll(ctx, tx, "environments", func(row pgx.Row) (string, error) {
		var env string
		err := row.Scan(&env)
		return env, err
	}, `SELECT DISTINCT env FROM component_states ORDER BY env`)
	if err != nil {
		return 0, err
	}
	var n int64
	for _, env := range envs {
		states, err := src.ComponentStates(ctx, env)
		if err != nil {
			return n, err
		}
		for _, st := range states {
			if err := s.putOutputs(ctx, tx, st); err != nil {
				return n, err
			}
			n += int64(len(st.Outputs))
		}
	}
	var got int64
	if err := tx.QueryRow(ctx, `SELECT COUNT(*) FROM outputs`).Scan(&got); err != nil {
		return n, err
	}
	if got != n {
		return n, fmt.Errorf("outputs: the SQLite store has %d, PostgreSQL holds %d", n, got)
	}
	return n, nil
}

// copyTFStates copies every Terraform state, sealed again under this
// store's key, and checks the count.
func (s *Store) copyTFStates(ctx context.Context, tx pgx.Tx, src Source) (int64, error) {
	keys, err := src.TFStateKeys(ctx)
	if err != nil {
		return 0, err
	}
	for _, key := range keys {
		data, _, err := src.TFState(ctx, key)
		if err != nil {
			return 0, err
		}
		sealed, err := s.sealer.Seal(data, store.TFStateAD(key))
		if err != nil {
			return 0, err
		}
		if _, err := tx.Exec(ctx, `INSERT INTO tf_states (key, data, updated_at) VALUES ($1, $2, 0)`, key, sealed); err != nil {
			return 0, fmt.Errorf("copy terraform state %s: %w", key, err)
		}
	}
	return int64(len(keys)), countIs(ctx, tx, "tf_states", len(keys))
}

// copySavedPlans copies every kept saved plan, sealed again, and checks
// the count.
func (s *Store) copySavedPlans(ctx context.Context, tx pgx.Tx, src Source) (int64, error) {
	ids, err := src.SavedPlanIDs(ctx)
	if err != nil {
		return 0, err
	}
	for _, id := range ids {
		data, err := src.SavedPlan(ctx, id)
		if err != nil {
			return 0, err
		}
		sealed, err := s.sealer.Seal(data, store.PlanAD(id))
		if err != nil {
			return 0, err
		}
		if _, err := tx.Exec(ctx, `INSERT INTO saved_plans (approval_id, data) VALUES ($1, $2)`, id, sealed); err != nil {
			return 0, fmt.Errorf("copy the saved plan of approval %d: %w", id, err)
		}
	}
	return int64(len(ids)), countIs(ctx, tx, "saved_plans", len(ids))
}

// countIs fails unless table holds want rows.
func countIs(ctx context.Context, tx pgx.Tx, table string, want int) error {
	var got int
	if err := tx.QueryRow(ctx, `SELECT COUNT(*) FROM `+pgx.Identifier{table}.Sanitize()).Scan(&got); err != nil {
		return err
	}
	if got != want {
		return fmt.Errorf("%s: the SQLite store has %d, PostgreSQL holds %d", table, want, got)
	}
	return nil
}

// resetIdentities moves each generated ID past the copied ones, so new
// rows do not collide with them.
func resetIdentities(ctx context.Context, tx pgx.Tx) error {
	for _, t := range []string{"component_runs", "audit_events", "approvals", "change_sets", "notification_outbox"} {
		_, err := tx.Exec(ctx, `SELECT setval(pg_get_serial_sequence($1, 'id'), COALESCE((SELECT MAX(id) FROM `+t+`), 0) + 1, false)`, t)
		if err != nil {
			return fmt.Errorf("reset the IDs of %s: %w", t, err)
		}
	}
	return nil
}
