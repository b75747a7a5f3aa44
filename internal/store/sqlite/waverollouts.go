package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"knit.dev/knit/internal/store"
)

const waveRolloutCols = `id, team, version, state, updated_at`

func scanWaveRollout(row rowScanner) (store.WaveRollout, error) {
	var r store.WaveRollout
	var state string
	err := row.Scan(&r.ID, &r.Team, &r.Version, &state, timeCol{&r.UpdatedAt})
	r.State = []byte(state)
	return r, err
}

// WaveRollout implements store.Store.
func (s *Store) WaveRollout(ctx context.Context, id string) (store.WaveRollout, error) {
	r, err := scanWaveRollout(s.q.QueryRowContext(ctx, `SELECT `+waveRolloutCols+` FROM set_rollouts WHERE id = ?`, id))
	if err != nil {
		return store.WaveRollout{}, notFound(err, "rollout of %s", id)
	}
	return r, nil
}

// ListWaveRollouts implements store.Store.
func (s *Store) ListWaveRollouts(ctx context.Context, team string) ([]store.WaveRollout, error) {
	return queryAll(ctx, s.q, "list rollouts", scanWaveRollout,
		`SELECT `+waveRolloutCols+` FROM set_rollouts WHERE ? = '' OR team = ? ORDER BY id`, team, team)
}

// PutWaveRollout implements store.Store.
func (s *Store) PutWaveRollout(ctx context.Context, r store.WaveRollout, audit *store.AuditEvent) error {
	err := s.write(ctx, func(tx *txn) error {
		var cur int64
		err := tx.QueryRowContext(ctx, `SELECT version FROM set_rollouts WHERE id = ?`, r.ID).Scan(&cur)
		if err != nil && !errors.Is(err, sql.ErrNoRows) {
			return err
		}
		if cur != r.Version {
			return fmt.Errorf("%w: the rollout is at version %d, not %d", store.ErrConflict, cur, r.Version)
		}
		at := r.UpdatedAt
		if at.IsZero() {
			at = s.now()
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO set_rollouts (`+waveRolloutCols+`) VALUES (?, ?, ?, ?, ?)
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
