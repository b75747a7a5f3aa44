package postgres

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"knit.dev/knit/internal/store"
)

// TFState implements store.Store.
func (s *Store) TFState(ctx context.Context, key string) ([]byte, store.TFLock, error) {
	var sealed []byte
	var l store.TFLock
	err := s.pool.QueryRow(ctx, `SELECT data, lock_id, lock_info, lock_host, lock_pid, lock_run FROM tf_states WHERE key = $1`, key).Scan(&sealed, &l.ID, &l.Info, &l.Host, &l.PID, &l.Run)
	if errors.Is(err, pgx.ErrNoRows) || (err == nil && sealed == nil) {
		return nil, l, fmt.Errorf("terraform state %s: %w", key, store.ErrNotFound)
	}
	if err != nil {
		return nil, l, fmt.Errorf("terraform state %s: %w", key, err)
	}
	data, err := s.sealer.Open(sealed, store.TFStateAD(key))
	if err != nil {
		return nil, l, fmt.Errorf("terraform state %s: open: %w", key, err)
	}
	return data, l, nil
}

// ReadTFState implements store.Store: the fence and the read are one
// transaction.
func (s *Store) ReadTFState(ctx context.Context, key, run string) ([]byte, error) {
	var sealed []byte
	err := s.read(ctx, func(tx pgx.Tx) error {
		if err := store.CheckTFFence(key, run, func(env, run string) (bool, error) { return runHoldsLock(ctx, tx, env, run) }); err != nil {
			return err
		}
		sealed = nil
		err := tx.QueryRow(ctx, `SELECT data FROM tf_states WHERE key = $1`, key).Scan(&sealed)
		if errors.Is(err, pgx.ErrNoRows) {
			return nil
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	if sealed == nil {
		return nil, fmt.Errorf("terraform state %s: %w", key, store.ErrNotFound)
	}
	data, err := s.sealer.Open(sealed, store.TFStateAD(key))
	if err != nil {
		return nil, fmt.Errorf("terraform state %s: open: %w", key, err)
	}
	return data, nil
}

// tfLock reads key's lock and header inside tx (zero when there is no row).
func tfLock(ctx context.Context, tx pgx.Tx, key string) (store.TFLock, store.TFHeader, error) {
	var l store.TFLock
	var h store.TFHeader
	err := tx.QueryRow(ctx, `SELECT lock_id, lock_info, lock_host, lock_pid, lock_run, serial, lineage FROM tf_states WHERE key = $1`, key).Scan(&l.ID, &l.Info, &l.Host, &l.PID, &l.Run, &h.Serial, &h.Lineage)
	if errors.Is(err, pgx.ErrNoRows) {
		return l, h, nil
	}
	return l, h, err
}

// checkTFWrite is the fence and the lock and header checks of a write
// (data) or delete of key by w, inside tx.
func checkTFWrite(ctx context.Context, tx pgx.Tx, key string, w store.TFWrite, data bool) error {
	if err := store.CheckTFFence(key, w.Run, func(env, run string) (bool, error) { return runHoldsLock(ctx, tx, env, run) }); err != nil {
		return err
	}
	held, cur, err := tfLock(ctx, tx, key)
	if err != nil {
		return err
	}
	return store.CheckTFWrite(key, held, cur, w, data)
}

// PutTFState implements store.Store. The write is one serializable
// transaction: of two replicas' tools writing at once, the fence, the
// lock check and the write are one step.
func (s *Store) PutTFState(ctx context.Context, key string, data []byte, w store.TFWrite) error {
	sealed, err := s.sealer.Seal(data, store.TFStateAD(key))
	if err != nil {
		return fmt.Errorf("seal terraform state %s: %w", key, err)
	}
	return s.write(ctx, func(tx pgx.Tx) error {
		if err := checkTFWrite(ctx, tx, key, w, true); err != nil {
			return err
		}
		now, err := s.now(ctx, tx)
		if err != nil {
			return err
		}
		_, err = tx.Exec(ctx, `UPDATE tf_states SET data = $1, serial = $2, lineage = $3, updated_at = $4 WHERE key = $5`,
			sealed, w.Serial, w.Lineage, ts(now), key)
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
	err = s.write(ctx, func(tx pgx.Tx) error {
		now, err := s.now(ctx, tx)
		if err != nil {
			return err
		}
		tag, err := tx.Exec(ctx, `INSERT INTO tf_states (key, data, updated_at) VALUES ($1, $2, $3)
			ON CONFLICT (key) DO NOTHING`, key, sealed, ts(now))
		done = err == nil && tag.RowsAffected() == 1
		return err
	})
	return done, err
}

// DeleteTFState implements store.Store. The row stays, with no state,
// so the lock outlives the delete as the tool expects.
func (s *Store) DeleteTFState(ctx context.Context, key string, w store.TFWrite) error {
	return s.write(ctx, func(tx pgx.Tx) error {
		if err := checkTFWrite(ctx, tx, key, w, false); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `UPDATE tf_states SET data = NULL, serial = 0, lineage = '' WHERE key = $1`, key)
		return err
	})
}

// LockTFState implements store.Store.
func (s *Store) LockTFState(ctx context.Context, key string, l store.TFLock, dead func(store.TFLock) bool) error {
	if l.ID == "" {
		return fmt.Errorf("lock terraform state %s: no lock ID", key)
	}
	return s.write(ctx, func(tx pgx.Tx) error {
		held, _, err := tfLock(ctx, tx, key)
		if err != nil {
			return err
		}
		if err := store.CheckTFLock(key, held, l, func(env, run string) (bool, error) { return runHoldsLock(ctx, tx, env, run) }, dead); err != nil {
			return err
		}
		now, err := s.now(ctx, tx)
		if err != nil {
			return err
		}
		_, err = tx.Exec(ctx, `INSERT INTO tf_states (key, lock_id, lock_info, lock_host, lock_pid, lock_run, updated_at) VALUES ($1, $2, $3, $4, $5, $6, $7)
			ON CONFLICT (key) DO UPDATE SET lock_id = excluded.lock_id, lock_info = excluded.lock_info,
				lock_host = excluded.lock_host, lock_pid = excluded.lock_pid, lock_run = excluded.lock_run`, key, l.ID, l.Info, l.Host, l.PID, l.Run, ts(now))
		return err
	})
}

// runHoldsLock reports whether run holds env's lock, inside tx.
func runHoldsLock(ctx context.Context, tx pgx.Tx, env, run string) (bool, error) {
	var n int
	err := tx.QueryRow(ctx, `SELECT count(*) FROM locks WHERE env = $1 AND run_id = $2`, env, run).Scan(&n)
	return n > 0, err
}

// UnlockTFState implements store.Store.
func (s *Store) UnlockTFState(ctx context.Context, key, lockID string) error {
	return s.write(ctx, func(tx pgx.Tx) error {
		held, _, err := tfLock(ctx, tx, key)
		if err != nil {
			return err
		}
		if err := store.CheckTFUnlock(key, held, lockID); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `UPDATE tf_states SET lock_id = '', lock_info = NULL, lock_host = '', lock_pid = 0, lock_run = '' WHERE key = $1`, key); err != nil {
			return err
		}
		_, err = tx.Exec(ctx, `DELETE FROM tf_states WHERE key = $1 AND data IS NULL`, key)
		return err
	})
}

// CountTFStates implements store.Store.
func (s *Store) CountTFStates(ctx context.Context) (int, error) {
	var n int
	err := s.pool.QueryRow(ctx, `SELECT count(*) FROM tf_states WHERE data IS NOT NULL`).Scan(&n)
	return n, err
}

// SavePlan implements store.Store.
func (s *Store) SavePlan(ctx context.Context, id int64, data []byte) error {
	sealed, err := s.sealer.Seal(data, store.PlanAD(id))
	if err != nil {
		return fmt.Errorf("seal plan of approval %d: %w", id, err)
	}
	err = s.write(ctx, func(tx pgx.Tx) error {
		_, err := tx.Exec(ctx, `INSERT INTO saved_plans (approval_id, data) VALUES ($1, $2)
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
	if err := s.pool.QueryRow(ctx, `SELECT data FROM saved_plans WHERE approval_id = $1`, id).Scan(&sealed); err != nil {
		return nil, notFound(err, "saved plan of approval %d", id)
	}
	data, err := s.sealer.Open(sealed, store.PlanAD(id))
	if err != nil {
		return nil, fmt.Errorf("saved plan of approval %d: open: %w", id, err)
	}
	return data, nil
}
