package postgres

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/jackc/pgx/v5"
)

// Skipped are the tables of this store Import does not copy, each with
// why: `knit store migrate` prints them. A name ending in "*" stands for
// every table it begins. Import fails for a table that is neither copied
// nor listed here, so a migration that adds one says which it is.
var Skipped = []SkippedTable{
	{"schema_migrations", "the migrations' own record: the copy starts at the SQLite store's version"},
	{"locks", "the runs' locks: knit is stopped for the copy, so none is held"},
	{"knit_run_events", "the River run queue's events for catch-up: a SQLite store's runs streamed from memory, and the component logs stay the record"},
	{"knit_river_clients", "the River run queue's live replicas: none runs yet"},
	{"river_*", "River's jobs and its own bookkeeping: a SQLite store's run queue lived in knit serve's memory (its interrupted runs resume from the runs table)"},
}

// SkippedTable is one table Import leaves as the migrations made it.
type SkippedTable struct {
	Table string
	Why   string
}

// skipped reports whether table is in Skipped.
func skipped(table string) bool {
	return slices.ContainsFunc(Skipped, func(s SkippedTable) bool {
		if prefix, ok := strings.CutSuffix(s.Table, "*"); ok {
			return strings.HasPrefix(table, prefix)
		}
		return s.Table == table
	})
}

// accountFor fails for a table of this store that Import neither copied
// (copied) nor skips knowingly (Skipped).
func accountFor(ctx context.Context, tx pgx.Tx, copied map[string]int64) error {
	tables, err := queryAll(ctx, tx, "tables", func(row pgx.Row) (string, error) {
		var name string
		err := row.Scan(&name)
		return name, err
	}, `SELECT tablename FROM pg_tables WHERE schemaname = current_schema() ORDER BY tablename`)
	if err != nil {
		return err
	}
	for _, t := range tables {
		if _, ok := copied[t]; !ok && !skipped(t) {
			return fmt.Errorf("table %s is neither copied nor skipped: copy it in Import or list it, with why, in postgres.Skipped", t)
		}
	}
	return nil
}
