package postgres

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"knit.dev/knit/internal/store"
)

const rolloutCols = `env, id, version, state, step, weight, run_id, detail, updated_at`

func scanRollout(row pgx.Row) (store.Rollout, error) {
	var r store.Rollout
	err := row.Scan(&r.Env, &r.ID, &r.Version, &r.State, &r.Step, &r.Weight, &r.RunID, &r.Detail, timeCol{&r.UpdatedAt})
	return r, err
}

// Rollout implements store.Store.
func (s *Store) Rollout(ctx context.Context, env string) (store.Rollout, error) {
	r, err := scanRollout(s.pool.QueryRow(ctx, `SELECT `+rolloutCols+` FROM rollouts WHERE env = $1`, env))
	if errors.Is(err, pgx.ErrNoRows) {
		return r, fmt.Errorf("rollout of %s: %w", env, store.ErrNotFound)
	}
	if err != nil {
		return r, fmt.Errorf("read the rollout of %s: %w", env, err)
	}
	return r, nil
}

// Rollouts implements store.Store.
func (s *Store) Rollouts(ctx context.Context) ([]store.Rollout, error) {
	return queryAll(ctx, s.pool, "list rollouts", scanRollout, `SELECT `+rolloutCols+` FROM rollouts ORDER BY env`)
}

// PutRollout implements store.Store.
func (s *Store) PutRollout(ctx context.Context, r store.Rollout, audit *store.AuditEvent) error {
	err := s.write(ctx, func(tx pgx.Tx) error {
		var cur int64
		err := tx.QueryRow(ctx, `SELECT version FROM rollouts WHERE env = $1`, r.Env).Scan(&cur)
		if err != nil && !errors.Is(err, pgx.ErrNoRows) {
			return err
		}
		if cur != r.Version {
			return fmt.Errorf("%w: the rollout is at version %d, not %d", store.ErrConflict, cur, r.Version)
		}
		if _, err := tx.Exec(ctx, `INSERT INTO rollouts (`+rolloutCols+`) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)
			ON CONFLICT (env) DO UPDATE SET id = excluded.id, version = excluded.version, state = excluded.state,
				step = excluded.step, weight = excluded.weight, run_id = excluded.run_id, detail = excluded.detail,
				updated_at = excluded.updated_at`,
			r.Env, r.ID, r.Version+1, r.State, r.Step, r.Weight, r.RunID, r.Detail, ts(r.UpdatedAt)); err != nil {
			return err
		}
		if audit == nil {
			return nil
		}
		return s.appendAudit(ctx, tx, *audit)
	})
	if err != nil {
		return fmt.Errorf("put the rollout of %s: %w", r.Env, err)
	}
	return nil
}
