package postgres

import (
	"context"
	"embed"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"knit.dev/knit/internal/store/migration"
)

// ErrSchemaNewer is returned by Open when the database's schema version is
// newer than this binary knows: a newer knit wrote it, and an older one must
// not guess at its layout.
var ErrSchemaNewer = errors.New("database schema is newer than this knit supports; upgrade knit")

//go:embed migrations/*.sql
var migrationFiles embed.FS

// Migrations is the number of schema versions this knit knows. The
// numbers match the SQLite store's: migration n makes the same change in
// each dialect, so a store copied from SQLite (knit store migrate) starts
// at the version it had.
func Migrations() int {
	ms, _ := migrations()
	return len(ms)
}

// migrations returns the embedded migrations in order.
func migrations() ([]migration.Migration, error) { return migration.Load(migrationFiles, "migrations") }

// migrationLock is the advisory lock key replicas opening at once take
// while they migrate, so each migration is applied exactly once.
const migrationLock = 0x6b6e6974 // "knit"

// migrate applies the migrations the database lacks, with their
// schema_migrations rows, in one transaction under an advisory lock: DDL is
// transactional in PostgreSQL, so a crash leaves the schema at a known
// version, and replicas starting together wait for the first.
func (s *Store) migrate(ctx context.Context) error {
	ms, err := migrations()
	if err != nil {
		return err
	}
	return pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, migrationLock); err != nil {
			return fmt.Errorf("wait for other replicas' migrations: %w", err)
		}
		if _, err := tx.Exec(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (
			version    INTEGER PRIMARY KEY,
			applied_at BIGINT NOT NULL
		)`); err != nil {
			return fmt.Errorf("create schema_migrations: %w", err)
		}
		var v int
		if err := tx.QueryRow(ctx, `SELECT COALESCE(MAX(version), 0) FROM schema_migrations`).Scan(&v); err != nil {
			return fmt.Errorf("read schema version: %w", err)
		}
		if v > len(ms) {
			return fmt.Errorf("%w (database version %d, this knit knows up to %d)", ErrSchemaNewer, v, len(ms))
		}
		for _, m := range ms[v:] {
			if _, err := tx.Exec(ctx, m.SQL); err != nil {
				return fmt.Errorf("migration %s: %w", m.Name, err)
			}
			now, err := s.now(ctx, tx)
			if err != nil {
				return err
			}
			if _, err := tx.Exec(ctx, `INSERT INTO schema_migrations (version, applied_at) VALUES ($1, $2)`, m.Version, now.UnixNano()); err != nil {
				return fmt.Errorf("record migration %s: %w", m.Name, err)
			}
		}
		return nil
	})
}
