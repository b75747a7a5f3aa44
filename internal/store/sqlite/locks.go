package sqlite

import (
	"context"
	"errors"
	"fmt"
	"time"

	"knit.dev/knit/internal/store"
)

// AcquireLock implements store.Store. The holder's lease is checked and
// replaced in one write transaction, so of two runs racing for a free
// environment exactly one wins. Expiry is judged by the store's clock, which
// also sets the lease's times; l.Acquired and l.Expires are ignored. A run
// acquiring a lock it holds extends its lease and keeps the lock's other
// fields. dead is called inside the transaction and should be quick. A
// lease that is not positive is an error.
func (s *Store) AcquireLock(ctx context.Context, l store.Lock, lease time.Duration, dead func(holder store.Lock) bool) (store.Lock, error) {
	if err := store.CheckLockRequest(l, lease); err != nil {
		return store.Lock{}, err
	}
	err := s.write(ctx, func(tx *txn) error {
		var held *store.Lock
		h, err := lock(ctx, tx, l.Env)
		switch {
		case err == nil:
			held = &h
		case !errors.Is(err, store.ErrNotFound):
			return err
		}
		if l, err = store.TakeLock(held, l, s.now(), lease, dead); err != nil {
			return err
		}
		return putLock(ctx, tx, l)
	})
	var le *store.LockedError
	switch {
	case errors.As(err, &le):
		return store.Lock{}, err
	case err != nil:
		return store.Lock{}, fmt.Errorf("acquire lock on %s: %w", l.Env, err)
	}
	return l, nil
}

// RenewLock implements store.Store: the lease runs until the store's now
// plus lease. A run may renew its lease after it expired as long as no
// other run took the lock. If the run no longer holds the lock (another run
// took it, or it was released) the error wraps store.ErrLockLost. A lease
// that is not positive is an error.
func (s *Store) RenewLock(ctx context.Context, env, runID string, lease time.Duration) error {
	if lease <= 0 {
		return fmt.Errorf("renew lock on %s for run %s: lease %v is not positive", env, runID, lease)
	}
	err := s.write(ctx, func(tx *txn) error {
		if err := holds(ctx, tx, env, runID); err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx, `UPDATE locks SET expires_at = ? WHERE env = ?`, ts(s.now().Add(lease)), env)
		return err
	})
	if err != nil {
		return fmt.Errorf("renew lock on %s for run %s: %w", env, runID, err)
	}
	return nil
}

// holds checks, inside a write transaction, that runID holds env's lock:
// the fence that refuses the writes of a run that lost it. Who holds it
// instead, or that no one does, is store.ErrLockLost.
func holds(ctx context.Context, tx *txn, env, runID string) error {
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
	var l store.Lock
	err := s.read(ctx, func(tx *txn) error {
		var err error
		l, err = lock(ctx, tx, env)
		return err
	})
	return l, err
}

// ReleaseLock implements store.Store. Releasing a lock runID does not hold
// (any more) does nothing and is not an error.
func (s *Store) ReleaseLock(ctx context.Context, env, runID string) error {
	return s.write(ctx, func(tx *txn) error { return releaseLock(ctx, tx, env, runID) })
}

// releaseLock is ReleaseLock's write in tx.
func releaseLock(ctx context.Context, tx *txn, env, runID string) error {
	if _, err := tx.ExecContext(ctx, `DELETE FROM locks WHERE env = ? AND run_id = ?`, env, runID); err != nil {
		return fmt.Errorf("release lock on %s: %w", env, err)
	}
	return nil
}

// lock reads env's lock; none is store.ErrNotFound.
func lock(ctx context.Context, tx *txn, env string) (store.Lock, error) {
	var l store.Lock
	err := tx.QueryRowContext(ctx, `SELECT env, run_id, owner, pid, host, acquired_at, expires_at FROM locks WHERE env = ?`, env).
		Scan(&l.Env, &l.RunID, &l.Owner, &l.PID, &l.Host, timeCol{&l.Acquired}, timeCol{&l.Expires})
	if err != nil {
		return store.Lock{}, notFound(err, "lock on %s", env)
	}
	return l, nil
}

// putLock makes l the lock on its environment, replacing any holder.
func putLock(ctx context.Context, tx *txn, l store.Lock) error {
	_, err := tx.ExecContext(ctx, `INSERT OR REPLACE INTO locks (env, run_id, owner, pid, host, acquired_at, expires_at)
		VALUES (?, ?, ?, ?, ?, ?, ?)`, l.Env, l.RunID, l.Owner, l.PID, l.Host, ts(l.Acquired), ts(l.Expires))
	return err
}
