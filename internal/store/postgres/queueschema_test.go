package postgres_test

import (
	"strings"
	"testing"

	"knit.dev/knit/internal/store/postgres"
	"knit.dev/knit/internal/store/sqlite"
	"knit.dev/knit/internal/testtools/pgtest"
)

// TestMigrationsCreateTheQueuesTables is issue 36: the store's migrations
// create every table knit uses, the River run queue's included (River's
// own at the schema version the migration pins, run by River's
// migrator); a database the queue had migrated itself, before, takes the
// migration as it is.
func TestMigrationsCreateTheQueuesTables(t *testing.T) {
	c := pgtest.Start(t)
	check := func(t *testing.T, dsn string) {
		t.Helper()
		db := conn(t, dsn)
		for _, rel := range []string{"river_job", "river_leader", "river_queue", "river_migration", "knit_run_events", "knit_river_clients",
			"knit_run_events_at", "river_job_knit_run", "river_job_knit_env"} {
			var found bool
			if err := db.QueryRow(t.Context(), `SELECT to_regclass($1) IS NOT NULL`, rel).Scan(&found); err != nil || !found {
				t.Errorf("after the store's migrations, %s exists: %v (%v)", rel, found, err)
			}
		}
		var v int
		if err := db.QueryRow(t.Context(), `SELECT max(version) FROM river_migration WHERE line = 'main'`).Scan(&v); err != nil || v != 8 {
			t.Errorf("River's schema is at version %d (%v), want the 8 migration 0024 pins", v, err)
		}
	}
	t.Run("New", func(t *testing.T) {
		dsn := c.DB(t)
		open(t, dsn).Close()
		check(t, dsn)
	})
	// A database of a knit before 0024: the queue had made its tables and
	// River's; the migration finds them and changes nothing.
	t.Run("QueueMadeThemBefore", func(t *testing.T) {
		dsn := c.DB(t)
		open(t, dsn).Close()
		db := conn(t, dsn)
		if _, err := db.Exec(t.Context(), `INSERT INTO knit_run_events (run_id, seq, event) VALUES ('r', 1, '{}');
			DELETE FROM schema_migrations WHERE version = 24`); err != nil {
			t.Fatal(err)
		}
		open(t, dsn).Close()
		check(t, dsn)
		var n int
		if err := db.QueryRow(t.Context(), `SELECT count(*) FROM knit_run_events`).Scan(&n); err != nil || n != 1 {
			t.Errorf("the queue's events after the migration: %d (%v), want the 1 kept", n, err)
		}
	})
}

// TestImportAccountsForEveryTable: knit store migrate copies a table or
// skips it knowingly (postgres.Skipped, the queue's among them); a table
// it knows nothing of fails the copy, which then copies nothing.
func TestImportAccountsForEveryTable(t *testing.T) {
	ctx := t.Context()
	src, err := sqlite.Open(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	fill(t, src)
	dsn := pgtest.Start(t).DB(t)
	dst := open(t, dsn)
	for _, table := range []string{"knit_run_events", "knit_river_clients", "river_*"} {
		if !slicesContainsTable(postgres.Skipped, table) {
			t.Errorf("postgres.Skipped does not list %s", table)
		}
	}
	if _, err := conn(t, dsn).Exec(ctx, `CREATE TABLE surprise (id INTEGER)`); err != nil {
		t.Fatal(err)
	}
	_, err = dst.Import(ctx, src, sqlite.Tables)
	if err == nil || !strings.Contains(err.Error(), "surprise") || !strings.Contains(err.Error(), "postgres.Skipped") {
		t.Fatalf("Import with an unknown table: %v, want it named with what to do", err)
	}
	var n int
	if err := conn(t, dsn).QueryRow(ctx, `SELECT count(*) FROM environments`).Scan(&n); err != nil || n != 0 {
		t.Errorf("a refused copy left %d environments (%v)", n, err)
	}
}

func slicesContainsTable(ts []postgres.SkippedTable, table string) bool {
	for _, s := range ts {
		if s.Table == table && s.Why != "" {
			return true
		}
	}
	return false
}
