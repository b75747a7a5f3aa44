package postgres

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"knit.dev/knit/internal/store"
)

// RecordToolProcess implements store.Store.
func (s *Store) RecordToolProcess(ctx context.Context, p store.ToolProcess) error {
	if p.RunID == "" || p.Env == "" || p.PGID <= 0 {
		return errors.New("record tool process: RunID, Env and a positive PGID are required")
	}
	err := s.write(ctx, func(tx pgx.Tx) error {
		started, err := s.orNow(ctx, tx, p.StartedAt)
		if err != nil {
			return err
		}
		// Recorded again, a group is a new record: it sorts as recorded now.
		if _, err := tx.Exec(ctx, `DELETE FROM tool_processes WHERE run_id = $1 AND host = $2 AND pgid = $3`, p.RunID, p.Host, p.PGID); err != nil {
			return err
		}
		_, err = tx.Exec(ctx, `INSERT INTO tool_processes (run_id, env, host, pgid, start, started_at) VALUES ($1, $2, $3, $4, $5, $6)`,
			p.RunID, p.Env, p.Host, p.PGID, p.Start, ts(started))
		return err
	})
	if err != nil {
		return fmt.Errorf("record process group %d of run %s: %w", p.PGID, p.RunID, err)
	}
	return nil
}

// ForgetToolProcess implements store.Store.
func (s *Store) ForgetToolProcess(ctx context.Context, runID, host string, pgid int) error {
	err := s.write(ctx, func(tx pgx.Tx) error {
		_, err := tx.Exec(ctx, `DELETE FROM tool_processes WHERE run_id = $1 AND host = $2 AND pgid = $3`, runID, host, pgid)
		return err
	})
	if err != nil {
		return fmt.Errorf("forget process group %d of run %s: %w", pgid, runID, err)
	}
	return nil
}

// ListToolProcesses implements store.Store.
func (s *Store) ListToolProcesses(ctx context.Context, env string) ([]store.ToolProcess, error) {
	return queryAll(ctx, s.pool, "tool processes of "+env, func(row pgx.Row) (store.ToolProcess, error) {
		var p store.ToolProcess
		err := row.Scan(&p.RunID, &p.Env, &p.Host, &p.PGID, &p.Start, timeCol{&p.StartedAt})
		return p, err
	}, `SELECT run_id, env, host, pgid, start, started_at FROM tool_processes WHERE env = $1 ORDER BY started_at NULLS FIRST, seq`, env)
}
