package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"knit.dev/knit/internal/store"
)

// AcquireLock implements store.Store. The holder's lease is checked and
// replaced in one write transaction, so of two runs racing for a free
// environment exactly one wins. Renewing one's own lease keeps its
// acquisition time. dead is called inside the transaction and should be quick.
func (s *Store) AcquireLock(ctx context.Context, l store.Lock, now time.Time, dead func(holder store.Lock) bool) error {
	if l.Env == "" || l.RunID == "" {
		return errors.New("acquire lock: Env and RunID are required")
	}
	err := s.write(ctx, func(tx *sql.Tx) error {
		h, err := lock(ctx, tx, l.Env)
		switch {
		case errors.Is(err, store.ErrNotFound):
			return putLock(ctx, tx, l)
		case err != nil:
			return err
		case h.RunID == l.RunID:
			_, err := tx.ExecContext(ctx, `UPDATE locks SET expires_at = ? WHERE env = ?`, ts(l.Expires), l.Env)
			return err
		case !h.Expires.After(now) || (dead != nil && dead(h)):
			return putLock(ctx, tx, l)
		}
		return &store.LockedError{Env: l.Env, Holder: h}
	})
	var le *store.LockedError
	if err != nil && !errors.As(err, &le) {
		return fmt.Errorf("acquire lock on %s: %w", l.Env, err)
	}
	return err
}

// RenewLock implements store.Store: it moves the lease's expiry to expires.
// If another run took the lock over the error is a *store.LockedError
// naming it; if no one holds it, store.ErrNotFound.
func (s *Store) RenewLock(ctx context.Context, env, runID string, expires time.Time) error {
	err := s.write(ctx, func(tx *sql.Tx) error {
		h, err := lock(ctx, tx, env)
		if err != nil {
			return err
		}
		if h.RunID != runID {
			return &store.LockedError{Env: env, Holder: h}
		}
		_, err = tx.ExecContext(ctx, `UPDATE locks SET expires_at = ? WHERE env = ?`, ts(expires), env)
		return err
	})
	if err != nil {
		return fmt.Errorf("renew lock on %s for run %s: %w", env, runID, err)
	}
	return nil
}

// ReleaseLock implements store.Store. Releasing a lock runID does not hold
// (any more) does nothing and is not an error.
func (s *Store) ReleaseLock(ctx context.Context, env, runID string) error {
	return s.write(ctx, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `DELETE FROM locks WHERE env = ? AND run_id = ?`, env, runID)
		if err != nil {
			return fmt.Errorf("release lock on %s: %w", env, err)
		}
		return nil
	})
}

// lock reads env's lock; none is store.ErrNotFound.
func lock(ctx context.Context, tx *sql.Tx, env string) (store.Lock, error) {
	var l store.Lock
	err := tx.QueryRowContext(ctx, `SELECT env, run_id, owner, pid, host, acquired_at, expires_at FROM locks WHERE env = ?`, env).
		Scan(&l.Env, &l.RunID, &l.Owner, &l.PID, &l.Host, timeCol{&l.Acquired}, timeCol{&l.Expires})
	if err != nil {
		return store.Lock{}, notFound(err, "lock on %s", env)
	}
	return l, nil
}

// putLock makes l the lock on its environment, replacing any holder.
func putLock(ctx context.Context, tx *sql.Tx, l store.Lock) error {
	_, err := tx.ExecContext(ctx, `INSERT OR REPLACE INTO locks (env, run_id, owner, pid, host, acquired_at, expires_at)
		VALUES (?, ?, ?, ?, ?, ?, ?)`, l.Env, l.RunID, l.Owner, l.PID, l.Host, ts(l.Acquired), ts(l.Expires))
	return err
}
