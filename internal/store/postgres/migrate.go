package postgres

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"
)

// ErrSchemaNewer is returned by Open when the database's schema version is
// newer than this binary knows: a newer knit wrote it, and an older one must
// not guess at its layout.
var ErrSchemaNewer = errors.New("database schema is newer than this knit supports; upgrade knit")

//go:embed migrations/*.sql
var migrationFiles embed.FS

// migration is one numbered schema change. The numbers match the SQLite
// store's: migration n makes the same change in each dialect, so a store
// copied from SQLite (knit store migrate) starts at the version it had.
type migration struct {
	version int
	name    string
	sql     string
}

// Migrations is the number of schema versions this knit knows.
func Migrations() int {
	ms, _ := migrations()
	return len(ms)
}

// migrations returns the embedded migrations in order, checking that they
// are numbered 1, 2, 3, … without gaps.
func migrations() ([]migration, error) {
	entries, err := fs.ReadDir(migrationFiles, "migrations")
	if err != nil {
		return nil, err
	}
	var ms []migration
	for _, e := range entries {
		num, _, ok := strings.Cut(e.Name(), "_")
		v, err := strconv.Atoi(num)
		if !ok || err != nil {
			return nil, fmt.Errorf("migration %s: name must start with its number, e.g. 0002_add_x.sql", e.Name())
		}
		b, err := migrationFiles.ReadFile(path.Join("migrations", e.Name()))
		if err != nil {
			return nil, err
		}
		ms = append(ms, migration{version: v, name: e.Name(), sql: string(b)})
	}
	sort.Slice(ms, func(i, j int) bool { return ms[i].version < ms[j].version })
	for i, m := range ms {
		if m.version != i+1 {
			return nil, fmt.Errorf("migration %s: expected version %d", m.name, i+1)
		}
	}
	return ms, nil
}

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
			if _, err := tx.Exec(ctx, m.sql); err != nil {
				return fmt.Errorf("migration %s: %w", m.name, err)
			}
			now, err := s.now(ctx, tx)
			if err != nil {
				return err
			}
			if _, err := tx.Exec(ctx, `INSERT INTO schema_migrations (version, applied_at) VALUES ($1, $2)`, m.version, now.UnixNano()); err != nil {
				return fmt.Errorf("record migration %s: %w", m.name, err)
			}
		}
		return nil
	})
}
