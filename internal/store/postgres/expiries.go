package postgres

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"knit.dev/knit/internal/store"
)

// SetExpiry implements store.Store: a zero at clears env's expiry. The
// audit event, when given, is appended in the same transaction.
func (s *Store) SetExpiry(ctx context.Context, env string, at time.Time, audit *store.AuditEvent) error {
	err := s.write(ctx, func(tx pgx.Tx) error {
		var err error
		if at.IsZero() {
			_, err = tx.Exec(ctx, `DELETE FROM environment_expiries WHERE env = $1`, env)
		} else {
			_, err = tx.Exec(ctx, `INSERT INTO environment_expiries (env, expires_at) VALUES ($1, $2)
				ON CONFLICT (env) DO UPDATE SET expires_at = excluded.expires_at`, env, ts(at))
		}
		if err != nil || audit == nil {
			return err
		}
		return s.appendAudit(ctx, tx, *audit)
	})
	if err != nil {
		return fmt.Errorf("set the expiry of %s: %w", env, err)
	}
	return nil
}

// Expiry implements store.Store; an environment without one is
// store.ErrNotFound.
func (s *Store) Expiry(ctx context.Context, env string) (store.Expiry, error) {
	e := store.Expiry{Env: env}
	err := s.pool.QueryRow(ctx, `SELECT expires_at, warned_for FROM environment_expiries WHERE env = $1`, env).
		Scan(timeCol{&e.At}, timeCol{&e.WarnedFor})
	if err != nil {
		return store.Expiry{}, notFound(err, "expiry of %s", env)
	}
	return e, nil
}

// Expiries implements store.Store, ordered by environment.
func (s *Store) Expiries(ctx context.Context) ([]store.Expiry, error) {
	return queryAll(ctx, s.pool, "list expiries", func(row pgx.Row) (store.Expiry, error) {
		var e store.Expiry
		err := row.Scan(&e.Env, timeCol{&e.At}, timeCol{&e.WarnedFor})
		return e, err
	}, `SELECT env, expires_at, warned_for FROM environment_expiries ORDER BY env`)
}

// MarkExpiryWarned implements store.Store: the warning is for the expiry
// at; one moved or cleared since is store.ErrConflict.
func (s *Store) MarkExpiryWarned(ctx context.Context, env string, at time.Time) error {
	err := s.write(ctx, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `UPDATE environment_expiries SET warned_for = expires_at
			WHERE env = $1 AND expires_at = $2`, env, ts(at))
		if err != nil {
			return err
		}
		if tag.RowsAffected() == 0 {
			return store.ErrConflict
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("mark the expiry of %s warned: %w", env, err)
	}
	return nil
}
