package sqlite

import (
	"context"
	"errors"
	"fmt"

	"knit.dev/knit/internal/store"
)

// RecordToolProcess implements store.Store.
func (s *Store) RecordToolProcess(ctx context.Context, p store.ToolProcess) error {
	if p.RunID == "" || p.Env == "" || p.PGID <= 0 {
		return errors.New("record tool process: RunID, Env and a positive PGID are required")
	}
	err := s.write(ctx, func(tx *txn) error {
		if p.StartedAt.IsZero() {
			p.StartedAt = s.now()
		}
		_, err := tx.ExecContext(ctx, `INSERT OR REPLACE INTO tool_processes (run_id, env, host, pgid, start, started_at)
			VALUES (?, ?, ?, ?, ?, ?)`, p.RunID, p.Env, p.Host, p.PGID, p.Start, ts(p.StartedAt))
		return err
	})
	if err != nil {
		return fmt.Errorf("record process group %d of run %s: %w", p.PGID, p.RunID, err)
	}
	return nil
}

// ForgetToolProcess implements store.Store.
func (s *Store) ForgetToolProcess(ctx context.Context, runID, host string, pgid int) error {
	err := s.write(ctx, func(tx *txn) error {
		_, err := tx.ExecContext(ctx, `DELETE FROM tool_processes WHERE run_id = ? AND host = ? AND pgid = ?`, runID, host, pgid)
		return err
	})
	if err != nil {
		return fmt.Errorf("forget process group %d of run %s: %w", pgid, runID, err)
	}
	return nil
}

// ListToolProcesses implements store.Store.
func (s *Store) ListToolProcesses(ctx context.Context, env string) ([]store.ToolProcess, error) {
	rows, err := s.q.QueryContext(ctx, `SELECT run_id, env, host, pgid, start, started_at FROM tool_processes
		WHERE env = ? ORDER BY started_at, rowid`, env)
	if err != nil {
		return nil, fmt.Errorf("tool processes of %s: %w", env, err)
	}
	defer rows.Close()
	var out []store.ToolProcess
	for rows.Next() {
		var p store.ToolProcess
		if err := rows.Scan(&p.RunID, &p.Env, &p.Host, &p.PGID, &p.Start, timeCol{&p.StartedAt}); err != nil {
			return nil, fmt.Errorf("tool processes of %s: %w", env, err)
		}
		out = append(out, p)
	}
	return out, rows.Err()
}
