package postgres

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivermigrate"

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

// riverMigrateLock is the lock knit before migration 0024 took around
// River's migrator (in the run queue); taken too, so a replica of that
// knit starting during an upgrade does not migrate River's tables at the
// same time.
const riverMigrateLock = 0x6b6e69745f72 // "knit_r"

// migrate applies the migrations the database lacks, with their
// schema_migrations rows, under a session advisory lock, so replicas
// starting together wait for the first. DDL is transactional in
// PostgreSQL: the migrations between two River steps go in one
// transaction, so a crash leaves the schema at a known version.
//
// A migration whose SQL has a line "-- knit:river-schema N" first brings
// River's tables to River's schema version N with River's own migrator
// (rivermigrate, the version go.mod pins), each of River's migrations in a
// transaction of its own: one adds an enum value a later one uses, which
// PostgreSQL refuses within one transaction, so River's SQL cannot simply
// be pasted into a knit migration. The version is pinned in the migration,
// not "River's latest": a River upgrade that needs newer tables gets a
// new knit migration that raises it, and a store's schema stays the one
// its version number says.
func (s *Store) migrate(ctx context.Context) error {
	ms, err := migrations()
	if err != nil {
		return err
	}
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return err
	}
	defer conn.Release()
	for _, key := range []int64{migrationLock, riverMigrateLock} {
		if _, err := conn.Exec(ctx, `SELECT pg_advisory_lock($1)`, key); err != nil {
			return fmt.Errorf("wait for other replicas' migrations: %w", err)
		}
		defer func() { _, _ = conn.Exec(context.WithoutCancel(ctx), `SELECT pg_advisory_unlock($1)`, key) }()
	}
	if _, err := conn.Exec(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (
		version    INTEGER PRIMARY KEY,
		applied_at BIGINT NOT NULL
	)`); err != nil {
		return fmt.Errorf("create schema_migrations: %w", err)
	}
	var v int
	if err := conn.QueryRow(ctx, `SELECT COALESCE(MAX(version), 0) FROM schema_migrations`).Scan(&v); err != nil {
		return fmt.Errorf("read schema version: %w", err)
	}
	if v > len(ms) {
		return fmt.Errorf("%w (database version %d, this knit knows up to %d)", ErrSchemaNewer, v, len(ms))
	}
	for pending := ms[v:]; len(pending) > 0; {
		n := 1 // the run of migrations up to the next River step
		for n < len(pending) && riverSchema(pending[n]) == 0 {
			n++
		}
		if err := s.migrateRiver(ctx, pending[0]); err != nil {
			return err
		}
		if err := pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error { return s.apply(ctx, tx, pending[:n]) }); err != nil {
			return err
		}
		pending = pending[n:]
	}
	return nil
}

// apply runs ms in tx, each with its schema_migrations row.
func (s *Store) apply(ctx context.Context, tx pgx.Tx, ms []migration.Migration) error {
	for _, m := range ms {
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
}

// riverSchemaLine marks a migration that needs River's tables first.
const riverSchemaLine = "-- knit:river-schema "

// riverSchema is the River schema version m needs before it runs (0: none).
func riverSchema(m migration.Migration) int {
	for line := range strings.Lines(m.SQL) {
		if rest, ok := strings.CutPrefix(strings.TrimSpace(line), strings.TrimSpace(riverSchemaLine)); ok {
			n, _ := strconv.Atoi(strings.TrimSpace(rest))
			return n
		}
	}
	return 0
}

// migrateRiver brings River's tables to the version m needs, if any.
func (s *Store) migrateRiver(ctx context.Context, m migration.Migration) error {
	target := riverSchema(m)
	if target == 0 {
		return nil
	}
	rm, err := rivermigrate.New(riverpgxv5.New(s.pool), &rivermigrate.Config{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		return fmt.Errorf("migration %s: River's migrator: %w", m.Name, err)
	}
	if _, err := rm.Migrate(ctx, rivermigrate.DirectionUp, &rivermigrate.MigrateOpts{TargetVersion: target}); err != nil {
		return fmt.Errorf("migration %s: River's tables to version %d: %w", m.Name, target, err)
	}
	return nil
}
