package postgres

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"knit.dev/knit/internal/store"
)

const waveRolloutCols = `id, team, version, state, updated_at`

func scanWaveRollout(row pgx.Row) (store.WaveRollout, error) {
	var r store.WaveRollout
	var state string
	err := row.Scan(&r.ID, &r.Team, &r.Version, &state, timeCol{&r.UpdatedAt})
	r.State = []byte(state)
	return r, err
}

// WaveRollout implements store.Store.
func (s *Store) WaveRollout(ctx context.Context, id string) (store.WaveRollout, error) {
	r, err := scanWaveRollout(s.pool.QueryRow(ctx, `SELECT `+waveRolloutCols+` FROM set_rollouts WHERE id = $1`, id))
	if err != nil {
		return store.WaveRollout{}, notFound(err, "rollout of %s", id)
	}
	return r, nil
}

// ListWaveRollouts implements store.Store.
func (s *Store) ListWaveRollouts(ctx context.Context, team string) ([]store.WaveRollout, error) {
	return queryAll(ctx, s.pool, "list rollouts", scanWaveRollout,
		`SELECT `+waveRolloutCols+` FROM set_rollouts WHERE $1 = '' OR team = $1 ORDER BY id`, team)
}

// PutWaveRollout implements store.Store.
func (s *Store) PutWaveRollout(ctx context.Context, r store.WaveRollout, audit *store.AuditEvent) error {
	err := s.write(ctx, func(tx pgx.Tx) error {
		var cur int64
		err := tx.QueryRow(ctx, `SELECT version FROM set_rollouts WHERE id = $1 FOR UPDATE`, r.ID).Scan(&cur)
		if err != nil && !errors.Is(err, pgx.ErrNoRows) {
			return err
		}
		if cur != r.Version {
			return fmt.Errorf("%w: the rollout is at version %d, not %d", store.ErrConflict, cur, r.Version)
		}
		at, err := s.stamp(ctx, tx, r.UpdatedAt)
		if err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `INSERT INTO set_rollouts (`+waveRolloutCols+`) VALUES ($1, $2, $3, $4, $5)
			ON CONFLICT (id) DO UPDATE SET team = excluded.team, version = excluded.version, state = excluded.state,
				updated_at = excluded.updated_at`, r.ID, r.Team, r.Version+1, string(r.State), ts(at)); err != nil {
			return err
		}
		if audit == nil {
			return nil
		}
		return s.appendAudit(ctx, tx, *audit)
	})
	if err != nil {
		return fmt.Errorf("put the rollout of %s: %w", r.ID, err)
	}
	return nil
}
