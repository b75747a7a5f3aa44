package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"knit.dev/knit/internal/store"
)

// AcquireLock implements store.Store. The holder's lease is read and
// replaced in one serializable transaction, so of two runs racing for a
// free environment, on any replicas, exactly one wins. Expiry is judged by
// the store's clock (the database's), which also sets the lease's times.
// dead is called inside the transaction and should be quick; it may be
// called again if the transaction is retried.
func (s *Store) AcquireLock(ctx context.Context, l store.Lock, lease time.Duration, dead func(holder store.Lock) bool) (store.Lock, error) {
	if err := store.CheckLockRequest(l, lease); err != nil {
		return store.Lock{}, err
	}
	var got store.Lock
	err := s.write(ctx, func(tx pgx.Tx) error {
		now, err := s.now(ctx, tx)
		if err != nil {
			return err
		}
		var held *store.Lock
		h, err := lock(ctx, tx, l.Env)
		switch {
		case err == nil:
			held = &h
		case !errors.Is(err, store.ErrNotFound):
			return err
		}
		if got, err = store.TakeLock(held, l, now, lease, dead); err != nil {
			return err
		}
		return putLock(ctx, tx, got)
	})
	var le *store.LockedError
	switch {
	case errors.As(err, &le):
		return store.Lock{}, err
	case err != nil:
		return store.Lock{}, fmt.Errorf("acquire lock on %s: %w", l.Env, err)
	}
	return got, nil
}

// RenewLock implements store.Store: the lease runs until the store's now
// plus lease. If the run no longer holds the lock the error wraps
// store.ErrLockLost.
func (s *Store) RenewLock(ctx context.Context, env, runID string, lease time.Duration) error {
	if lease <= 0 {
		return fmt.Errorf("renew lock on %s for run %s: lease %v is not positive", env, runID, lease)
	}
	err := s.write(ctx, func(tx pgx.Tx) error {
		if err := holds(ctx, tx, env, runID); err != nil {
			return err
		}
		now, err := s.now(ctx, tx)
		if err != nil {
			return err
		}
		_, err = tx.Exec(ctx, `UPDATE locks SET expires_at = $1 WHERE env = $2`, ts(now.Add(lease)), env)
		return err
	})
	if err != nil {
		return fmt.Errorf("renew lock on %s for run %s: %w", env, runID, err)
	}
	return nil
}

// holds checks, inside a write transaction, that runID holds env's lock:
// the fence that refuses the writes of a run that lost it.
func holds(ctx context.Context, tx pgx.Tx, env, runID string) error {
	h, err := lock(ctx, tx, env)
	if errors.Is(err, store.ErrNotFound) {
		return store.NoHolder(env, runID)
	}
	if err != nil {
		return err
	}
	return store.CheckHolder(h, env, runID)
}

// Lock implements store.Store: env's current holder, or store.ErrNotFound.
func (s *Store) Lock(ctx context.Context, env string) (store.Lock, error) {
	return lock(ctx, s.pool, env)
}

// ReleaseLock implements store.Store. Releasing a lock runID does not hold
// does nothing and is not an error.
func (s *Store) ReleaseLock(ctx context.Context, env, runID string) error {
	return s.write(ctx, func(tx pgx.Tx) error { return releaseLock(ctx, tx, env, runID) })
}

// releaseLock is ReleaseLock's write in tx.
func releaseLock(ctx context.Context, tx pgx.Tx, env, runID string) error {
	if _, err := tx.Exec(ctx, `DELETE FROM locks WHERE env = $1 AND run_id = $2`, env, runID); err != nil {
		return fmt.Errorf("release lock on %s: %w", env, err)
	}
	return nil
}

// lock reads env's lock; none is store.ErrNotFound.
func lock(ctx context.Context, q querier, env string) (store.Lock, error) {
	var l store.Lock
	err := q.QueryRow(ctx, `SELECT env, run_id, owner, pid, host, acquired_at, expires_at FROM locks WHERE env = $1`, env).
		Scan(&l.Env, &l.RunID, &l.Owner, &l.PID, &l.Host, timeCol{&l.Acquired}, timeCol{&l.Expires})
	if err != nil {
		return store.Lock{}, notFound(err, "lock on %s", env)
	}
	return l, nil
}

// putLock makes l the lock on its environment, replacing any holder.
func putLock(ctx context.Context, tx pgx.Tx, l store.Lock) error {
	_, err := tx.Exec(ctx, `INSERT INTO locks (env, run_id, owner, pid, host, acquired_at, expires_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7)
		ON CONFLICT (env) DO UPDATE SET run_id = excluded.run_id, owner = excluded.owner, pid = excluded.pid,
			host = excluded.host, acquired_at = excluded.acquired_at, expires_at = excluded.expires_at`,
		l.Env, l.RunID, l.Owner, l.PID, l.Host, ts(l.Acquired), ts(l.Expires))
	return err
}
