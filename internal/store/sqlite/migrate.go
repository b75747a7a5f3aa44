package sqlite

import (
	"context"
	"embed"
	"errors"
	"fmt"

	"knit.dev/knit/internal/store/migration"
)

// ErrSchemaNewer is returned by Open when the database's schema version is
// newer than this binary knows: a newer knit wrote it, and an older one must
// not guess at its layout.
var ErrSchemaNewer = errors.New("database schema is newer than this knit supports; upgrade knit")

//go:embed migrations/*.sql
var migrationFiles embed.FS

// migrations returns the embedded migrations in order.
func migrations() ([]migration.Migration, error) { return migration.Load(migrationFiles, "migrations") }

// migrate applies the migrations the database lacks, together with their
// schema_migrations rows, in one transaction, so a crash leaves the schema
// at a known version and two processes opening at once apply each
// migration exactly once.
func (s *Store) migrate(ctx context.Context) error {
	ms, err := migrations()
	if err != nil {
		return err
	}
	// The common case, an up-to-date database, needs no write transaction
	// (which would wait for, and hold up, a server's writer at every start).
	if v, err := schemaVersion(ctx, s.db); err == nil && v == len(ms) {
		return nil
	}
	err = s.write(ctx, func(tx *txn) error {
		_, err := tx.Tx.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (
			version    INTEGER PRIMARY KEY,
			applied_at TEXT NOT NULL
		) STRICT`)
		return err
	})
	if err != nil {
		return fmt.Errorf("create schema_migrations: %w", err)
	}
	v, err := schemaVersion(ctx, s.db)
	if err != nil {
		return err
	}
	if v > len(ms) {
		return fmt.Errorf("%w (database version %d, this knit knows up to %d)", ErrSchemaNewer, v, len(ms))
	}
	// Every pending migration in one transaction: a new store is created
	// in one commit, and a failed upgrade leaves the schema as it was.
	return s.write(ctx, func(tx *txn) error {
		for _, m := range ms[v:] {
			if err := s.apply(ctx, tx, m, len(ms)); err != nil {
				return err
			}
		}
		return nil
	})
}

// apply runs m in tx unless the database already has it; it refuses a
// database whose version is beyond latest.
func (s *Store) apply(ctx context.Context, tx *txn, m migration.Migration, latest int) error {
	v, err := schemaVersion(ctx, tx)
	if err != nil {
		return err
	}
	if v > latest {
		return fmt.Errorf("%w (database version %d, this knit knows up to %d)", ErrSchemaNewer, v, latest)
	}
	if v >= m.Version {
		return nil
	}
	if _, err := tx.Tx.ExecContext(ctx, m.SQL); err != nil { // DDL: not worth a cached statement
		return fmt.Errorf("migration %s: %w", m.Name, err)
	}
	_, err = tx.ExecContext(ctx, `INSERT INTO schema_migrations (version, applied_at) VALUES (?, ?)`, m.Version, ts(s.now()))
	if err != nil {
		return fmt.Errorf("record migration %s: %w", m.Name, err)
	}
	return nil
}

// schemaVersion is the highest applied migration, 0 for a new database.
func schemaVersion(ctx context.Context, q querier) (int, error) {
	var v int
	err := q.QueryRowContext(ctx, `SELECT COALESCE(MAX(version), 0) FROM schema_migrations`).Scan(&v)
	if err != nil {
		return 0, fmt.Errorf("read schema version: %w", err)
	}
	return v, nil
}
