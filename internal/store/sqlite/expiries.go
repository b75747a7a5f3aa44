package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"knit.dev/knit/internal/store"
)

// SetExpiry implements store.Store.
func (s *Store) SetExpiry(ctx context.Context, env string, at time.Time, audit *store.AuditEvent) error {
	err := s.write(ctx, func(tx *txn) error {
		var err error
		if at.IsZero() {
			_, err = tx.ExecContext(ctx, `DELETE FROM environment_expiries WHERE env = ?`, env)
		} else {
			_, err = tx.ExecContext(ctx, `INSERT INTO environment_expiries (env, expires_at) VALUES (?, ?)
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

// Expiry implements store.Store.
func (s *Store) Expiry(ctx context.Context, env string) (store.Expiry, error) {
	e := store.Expiry{Env: env}
	err := s.q.QueryRowContext(ctx, `SELECT expires_at, warned_for FROM environment_expiries WHERE env = ?`, env).
		Scan(timeCol{&e.At}, timeCol{&e.WarnedFor})
	if errors.Is(err, sql.ErrNoRows) {
		return store.Expiry{}, fmt.Errorf("expiry of %s: %w", env, store.ErrNotFound)
	} else if err != nil {
		return store.Expiry{}, fmt.Errorf("expiry of %s: %w", env, err)
	}
	return e, nil
}

// Expiries implements store.Store.
func (s *Store) Expiries(ctx context.Context) ([]store.Expiry, error) {
	rows, err := s.q.QueryContext(ctx, `SELECT env, expires_at, warned_for FROM environment_expiries ORDER BY env`)
	if err != nil {
		return nil, fmt.Errorf("list expiries: %w", err)
	}
	defer rows.Close()
	var out []store.Expiry
	for rows.Next() {
		var e store.Expiry
		if err := rows.Scan(&e.Env, timeCol{&e.At}, timeCol{&e.WarnedFor}); err != nil {
			return nil, fmt.Errorf("list expiries: %w", err)
		}
		out = append(out, e)
	}
	return out, rows.Err()
}

// MarkExpiryWarned implements store.Store.
func (s *Store) MarkExpiryWarned(ctx context.Context, env string, at time.Time) error {
	err := s.write(ctx, func(tx *txn) error {
		res, err := tx.ExecContext(ctx, `UPDATE environment_expiries SET warned_for = expires_at
			WHERE env = ? AND expires_at = ?`, env, ts(at))
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil {
			return err
		} else if n == 0 {
			return store.ErrConflict
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("mark the expiry of %s warned: %w", env, err)
	}
	return nil
}
