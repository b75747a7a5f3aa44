package sqlite

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
)

// ErrSchemaNewer is returned by Open when the database's schema version is
// newer than this binary knows: a newer knit wrote it, and an older one must
// not guess at its layout.
var ErrSchemaNewer = errors.New("database schema is newer than this knit supports; upgrade knit")

//go:embed migrations/*.sql
var migrationFiles embed.FS

// migration is one numbered schema change.
type migration struct {
	version int
	name    string
	sql     string
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
func (s *Store) apply(ctx context.Context, tx *txn, m migration, latest int) error {
	v, err := schemaVersion(ctx, tx)
	if err != nil {
		return err
	}
	if v > latest {
		return fmt.Errorf("%w (database version %d, this knit knows up to %d)", ErrSchemaNewer, v, latest)
	}
	if v >= m.version {
		return nil
	}
	if _, err := tx.Tx.ExecContext(ctx, m.sql); err != nil { // DDL: not worth a cached statement
		return fmt.Errorf("migration %s: %w", m.name, err)
	}
	_, err = tx.ExecContext(ctx, `INSERT INTO schema_migrations (version, applied_at) VALUES (?, ?)`, m.version, ts(s.now()))
	if err != nil {
		return fmt.Errorf("record migration %s: %w", m.name, err)
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
