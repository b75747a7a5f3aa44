package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"knit.dev/knit/internal/store"
)

// TFState implements store.Store.
func (s *Store) TFState(ctx context.Context, key string) ([]byte, store.TFLock, error) {
	var sealed []byte
	var l store.TFLock
	err := s.q.QueryRowContext(ctx, `SELECT data, lock_id, lock_info, lock_host, lock_pid, lock_run FROM tf_states WHERE key = ?`, key).Scan(&sealed, &l.ID, &l.Info, &l.Host, &l.PID, &l.Run)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, store.TFLock{}, fmt.Errorf("terraform state %s: %w", key, store.ErrNotFound)
	}
	if err != nil {
		return nil, l, fmt.Errorf("terraform state %s: %w", key, err)
	}
	if sealed == nil {
		return nil, l, fmt.Errorf("terraform state %s: %w", key, store.ErrNotFound)
	}
	data, err := s.sealer.Open(sealed, store.TFStateAD(key))
	if err != nil {
		return nil, l, fmt.Errorf("terraform state %s: open: %w", key, err)
	}
	return data, l, nil
}

// tfLock reads key's lock inside tx (a zero TFLock when there is no row).
func tfLock(ctx context.Context, tx *txn, key string) (store.TFLock, bool, error) {
	var l store.TFLock
	err := tx.QueryRowContext(ctx, `SELECT lock_id, lock_info, lock_host, lock_pid, lock_run FROM tf_states WHERE key = ?`, key).Scan(&l.ID, &l.Info, &l.Host, &l.PID, &l.Run)
	if errors.Is(err, sql.ErrNoRows) {
		return l, false, nil
	}
	return l, err == nil, err
}

// PutTFState implements store.Store.
func (s *Store) PutTFState(ctx context.Context, key string, data []byte, lockID string) error {
	sealed, err := s.sealer.Seal(data, store.TFStateAD(key))
	if err != nil {
		return fmt.Errorf("seal terraform state %s: %w", key, err)
	}
	return s.write(ctx, func(tx *txn) error {
		held, _, err := tfLock(ctx, tx, key)
		if err != nil {
			return err
		}
		if err := store.CheckTFWrite(key, held, lockID); err != nil {
			return err
		}
		_, err = tx.ExecContext(ctx, `INSERT INTO tf_states (key, data, updated_at) VALUES (?, ?, ?)
			ON CONFLICT (key) DO UPDATE SET data = excluded.data, updated_at = excluded.updated_at`, key, sealed, ts(s.now()))
		return err
	})
}

// ImportTFState implements store.Store.
func (s *Store) ImportTFState(ctx context.Context, key string, data []byte) (bool, error) {
	sealed, err := s.sealer.Seal(data, store.TFStateAD(key))
	if err != nil {
		return false, fmt.Errorf("seal terraform state %s: %w", key, err)
	}
	var done bool
	err = s.write(ctx, func(tx *txn) error {
		res, err := tx.ExecContext(ctx, `INSERT INTO tf_states (key, data, updated_at) VALUES (?, ?, ?)
			ON CONFLICT (key) DO NOTHING`, key, sealed, ts(s.now()))
		if err != nil {
			return err
		}
		n, err := res.RowsAffected()
		done = n == 1
		return err
	})
	return done, err
}

// DeleteTFState implements store.Store. The row stays while locked, with
// no state, so the lock outlives the delete as the tool expects.
func (s *Store) DeleteTFState(ctx context.Context, key, lockID string) error {
	return s.write(ctx, func(tx *txn) error {
		held, _, err := tfLock(ctx, tx, key)
		if err != nil {
			return err
		}
		if err := store.CheckTFWrite(key, held, lockID); err != nil {
			return err
		}
		if held.ID != "" {
			_, err = tx.ExecContext(ctx, `UPDATE tf_states SET data = NULL, updated_at = ? WHERE key = ?`, ts(s.now()), key)
			return err
		}
		_, err = tx.ExecContext(ctx, `DELETE FROM tf_states WHERE key = ?`, key)
		return err
	})
}

// LockTFState implements store.Store.
func (s *Store) LockTFState(ctx context.Context, key string, l store.TFLock, dead func(store.TFLock) bool) error {
	if l.ID == "" {
		return fmt.Errorf("lock terraform state %s: no lock ID", key)
	}
	return s.write(ctx, func(tx *txn) error {
		held, _, err := tfLock(ctx, tx, key)
		if err != nil {
			return err
		}
		if err := store.CheckTFLock(key, held, l, func(run string) (bool, error) { return runHoldsLock(ctx, tx, run) }, dead); err != nil {
			return err
		}
		_, err = tx.ExecContext(ctx, `INSERT INTO tf_states (key, lock_id, lock_info, lock_host, lock_pid, lock_run, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?)
			ON CONFLICT (key) DO UPDATE SET lock_id = excluded.lock_id, lock_info = excluded.lock_info,
				lock_host = excluded.lock_host, lock_pid = excluded.lock_pid, lock_run = excluded.lock_run`, key, l.ID, l.Info, l.Host, l.PID, l.Run, ts(s.now()))
		return err
	})
}

// runHoldsLock reports whether run holds an environment's lock, inside tx.
func runHoldsLock(ctx context.Context, tx *txn, run string) (bool, error) {
	var n int
	err := tx.QueryRowContext(ctx, `SELECT count(*) FROM locks WHERE run_id = ?`, run).Scan(&n)
	return n > 0, err
}

// UnlockTFState implements store.Store.
func (s *Store) UnlockTFState(ctx context.Context, key, lockID string) error {
	return s.write(ctx, func(tx *txn) error {
		held, _, err := tfLock(ctx, tx, key)
		if err != nil {
			return err
		}
		if err := store.CheckTFUnlock(key, held, lockID); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `UPDATE tf_states SET lock_id = '', lock_info = NULL, lock_host = '', lock_pid = 0, lock_run = '' WHERE key = ?`, key); err != nil {
			return err
		}
		_, err = tx.ExecContext(ctx, `DELETE FROM tf_states WHERE key = ? AND data IS NULL`, key)
		return err
	})
}

// CountTFStates implements store.Store.
func (s *Store) CountTFStates(ctx context.Context) (int, error) {
	var n int
	err := s.q.QueryRowContext(ctx, `SELECT count(*) FROM tf_states WHERE data IS NOT NULL`).Scan(&n)
	return n, err
}

// SavePlan implements store.Store.
func (s *Store) SavePlan(ctx context.Context, id int64, data []byte) error {
	sealed, err := s.sealer.Seal(data, store.PlanAD(id))
	if err != nil {
		return fmt.Errorf("seal plan of approval %d: %w", id, err)
	}
	err = s.write(ctx, func(tx *txn) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO saved_plans (approval_id, data) VALUES (?, ?)
			ON CONFLICT (approval_id) DO UPDATE SET data = excluded.data`, id, sealed)
		return err
	})
	if err != nil {
		return fmt.Errorf("save plan of approval %d: %w", id, err)
	}
	return nil
}

// SavedPlan implements store.Store.
func (s *Store) SavedPlan(ctx context.Context, id int64) ([]byte, error) {
	var sealed []byte
	err := s.q.QueryRowContext(ctx, `SELECT data FROM saved_plans WHERE approval_id = ?`, id).Scan(&sealed)
	if err != nil {
		return nil, notFound(err, "saved plan of approval %d", id)
	}
	data, err := s.sealer.Open(sealed, store.PlanAD(id))
	if err != nil {
		return nil, fmt.Errorf("saved plan of approval %d: open: %w", id, err)
	}
	return data, nil
}
