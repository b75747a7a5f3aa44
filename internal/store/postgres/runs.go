package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"knit.dev/knit/internal/store"
)

// CreateRun implements store.Store. The ID must be new; a zero StartedAt
// becomes now.
func (s *Store) CreateRun(ctx context.Context, r store.Run) error {
	if r.ID == "" || r.Env == "" {
		return errors.New("create run: ID and Env are required")
	}
	return s.write(ctx, func(tx pgx.Tx) error { return s.createRun(ctx, tx, r) })
}

// createRun is CreateRun's write in tx (a zero StartedAt becomes the
// database's now).
func (s *Store) createRun(ctx context.Context, tx pgx.Tx, r store.Run) error {
	started := r.StartedAt
	if started.IsZero() {
		now, err := s.now(ctx, tx)
		if err != nil {
			return err
		}
		started = now
	}
	_, err := tx.Exec(ctx, `INSERT INTO runs (`+runColumns+`) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14)`,
		r.ID, r.Env, r.Kind, r.Revision, r.Status, r.Actor, r.Reason, r.Source, r.Error, r.PID, ts(started), ts(r.FinishedAt), r.SupersededBy, nullBytes(r.Policy))
	if err != nil {
		return fmt.Errorf("create run %s: %w", r.ID, err)
	}
	return nil
}

// FinishRun implements store.Store; a missing run is store.ErrNotFound. It
// refuses (store.ErrLockLost), writing nothing, to finish a run that is no
// longer running or whose environment's lock another run holds.
func (s *Store) FinishRun(ctx context.Context, id string, status store.RunStatus, errMsg string, at time.Time) error {
	return s.write(ctx, func(tx pgx.Tx) error {
		_, err := finishRun(ctx, tx, id, status, errMsg, at)
		return err
	})
}

// RecordOutcome implements store.Store: FinishRun, the run's policy
// decisions, AppendAudit and SetEnvironmentStatus in one transaction.
func (s *Store) RecordOutcome(ctx context.Context, o store.RunOutcome) error {
	return s.write(ctx, func(tx pgx.Tx) error {
		r, err := finishRun(ctx, tx, o.RunID, o.Status, o.Error, o.At)
		if err != nil {
			return err
		}
		if len(o.Policy) > 0 {
			if _, err := tx.Exec(ctx, `UPDATE runs SET policy = $1 WHERE id = $2`, []byte(o.Policy), o.RunID); err != nil {
				return fmt.Errorf("record the policy decisions of run %s: %w", o.RunID, err)
			}
		}
		if o.Verification != "" {
			if _, err := tx.Exec(ctx, `UPDATE revisions SET verification = $1 WHERE env = $2 AND number = $3`, o.Verification, r.Env, r.Revision); err != nil {
				return fmt.Errorf("record the verification of run %s: %w", o.RunID, err)
			}
		}
		if o.Audit != nil {
			if err := s.appendAudit(ctx, tx, *o.Audit); err != nil {
				return err
			}
		}
		if o.EnvStatus != "" {
			if err := s.setEnvironmentStatus(ctx, tx, r.Env, o.EnvStatus); err != nil {
				return err
			}
		}
		if o.ReleaseLock {
			return releaseLock(ctx, tx, r.Env, o.RunID)
		}
		return nil
	})
}

// finishRun is FinishRun inside tx; it returns the run as it was.
func finishRun(ctx context.Context, tx pgx.Tx, id string, status store.RunStatus, errMsg string, at time.Time) (store.Run, error) {
	r, err := scanRun(tx.QueryRow(ctx, `SELECT `+runColumns+` FROM runs WHERE id = $1`, id))
	if err != nil {
		return r, notFound(err, "finish run %s", id)
	}
	if r.Status != store.StatusRunning {
		return r, fmt.Errorf("finish run %s: %w (it was already recorded %s)", id, store.ErrLockLost, r.Status)
	}
	h, err := lock(ctx, tx, r.Env)
	switch {
	case errors.Is(err, store.ErrNotFound):
	case err != nil:
		return r, fmt.Errorf("finish run %s: %w", id, err)
	default:
		if err := store.CheckHolder(h, r.Env, id); err != nil {
			return r, fmt.Errorf("finish run %s: %w", id, err)
		}
	}
	tag, err := tx.Exec(ctx, `UPDATE runs SET status = $1, error = $2, finished_at = $3 WHERE id = $4`, status, errMsg, ts(at), id)
	return r, affected(tag, err, "finish run %s", id)
}

const runColumns = `id, env, kind, revision, status, actor, reason, source, error, pid, started_at, finished_at, superseded_by, policy`

func scanRun(sc pgx.Row) (store.Run, error) {
	var r store.Run
	err := sc.Scan(&r.ID, &r.Env, &r.Kind, &r.Revision, &r.Status, &r.Actor, &r.Reason, &r.Source, &r.Error, &r.PID,
		timeCol{&r.StartedAt}, timeCol{&r.FinishedAt}, &r.SupersededBy, (*[]byte)(&r.Policy))
	if len(r.Policy) == 0 {
		r.Policy = nil
	}
	return r, err
}

// nullBytes is b, or NULL when empty.
func nullBytes(b []byte) any {
	if len(b) == 0 {
		return nil
	}
	return b
}

// Run implements store.Store; a missing run is store.ErrNotFound.
func (s *Store) Run(ctx context.Context, id string) (store.Run, error) {
	r, err := scanRun(s.pool.QueryRow(ctx, `SELECT `+runColumns+` FROM runs WHERE id = $1`, id))
	if err != nil {
		return store.Run{}, notFound(err, "run %s", id)
	}
	return r, nil
}

// newestFirst orders runs newest start first, and of runs started at the
// same time the one created last first; a run with no start (written by an
// older knit) sorts last, as in the SQLite store.
const newestFirst = ` ORDER BY started_at DESC NULLS LAST, seq DESC`

// Runs implements store.Store. f.Before is a run ID: only runs older than
// it, in that order, are listed; an unknown one is store.ErrNotFound. The
// cursor and the page are read in one snapshot.
func (s *Store) Runs(ctx context.Context, env string, f store.RunFilter) ([]store.Run, error) {
	var runs []store.Run
	err := s.read(ctx, func(tx pgx.Tx) error {
		a := &args{}
		if env != "" {
			a.add("env = ?", env)
		}
		if f.Status != "" {
			a.add("status = ?", f.Status)
		}
		if f.Kind != "" {
			a.add("kind = ?", f.Kind)
		}
		if len(f.Teams) > 0 {
			a.envOfTeams("env", f.Teams)
		}
		if f.Before != "" {
			var started *int64
			var seq int64
			if err := tx.QueryRow(ctx, `SELECT started_at, seq FROM runs WHERE id = $1`, f.Before).Scan(&started, &seq); err != nil {
				return notFound(err, "run %s", f.Before)
			}
			if started != nil { // older: an earlier start, none, or the same start created before
				a.add("(started_at < ? OR started_at IS NULL OR (started_at = ? AND seq < ?))", *started, *started, seq)
			} else {
				a.add("started_at IS NULL AND seq < ?", seq)
			}
		}
		var err error
		runs, err = queryAll(ctx, tx, "runs", scanRun, `SELECT `+runColumns+` FROM runs`+a.clause()+newestFirst+limitClause(f.Limit), a.vals...)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("list runs of %q: %w", env, err)
	}
	return runs, nil
}

// InterruptRuns implements store.Store. Each interrupted run gets an error
// naming its vanished process (unless it already had one), and its
// component runs still running are interrupted too. alive must not be nil.
func (s *Store) InterruptRuns(ctx context.Context, env string, alive func(pid int) bool, at time.Time) ([]string, error) {
	if alive == nil {
		return nil, errors.New("interrupt runs: alive func is nil")
	}
	// Every run starts by asking, and there is rarely a crashed run to
	// mark: look first in a read. A run found dead cannot come back to
	// life, so the write below sees it too.
	dead, err := deadRuns(ctx, s.pool, env, alive)
	if err != nil || len(dead) == 0 {
		return nil, err
	}
	var ids []string
	err = s.write(ctx, func(tx pgx.Tx) error {
		ids = nil
		dead, err := deadRuns(ctx, tx, env, alive)
		if err != nil {
			return err
		}
		for _, r := range dead {
			if err := interruptRun(ctx, tx, r, at); err != nil {
				return err
			}
			ids = append(ids, r.ID)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("interrupt runs of %s: %w", env, err)
	}
	return ids, nil
}

// deadRuns lists env's running runs whose process is not alive, oldest first.
func deadRuns(ctx context.Context, q querier, env string, alive func(int) bool) ([]store.Run, error) {
	running, err := queryAll(ctx, q, "interrupt runs of "+env, scanRun, `SELECT `+runColumns+` FROM runs
		WHERE env = $1 AND status = $2 ORDER BY started_at NULLS FIRST, seq`, env, store.StatusRunning)
	if err != nil {
		return nil, err
	}
	var dead []store.Run
	for _, r := range running {
		if !alive(r.PID) {
			dead = append(dead, r)
		}
	}
	return dead, nil
}

func interruptRun(ctx context.Context, tx pgx.Tx, r store.Run, at time.Time) error {
	_, err := tx.Exec(ctx, `UPDATE runs SET status = $1, error = $2, finished_at = $3 WHERE id = $4`,
		store.StatusInterrupted, store.InterruptedError(r), ts(at), r.ID)
	if err != nil {
		return fmt.Errorf("interrupt run %s: %w", r.ID, err)
	}
	_, err = tx.Exec(ctx, `UPDATE component_runs SET status = $1, finished_at = $2 WHERE run_id = $3 AND status = $4`,
		store.StatusInterrupted, ts(at), r.ID, store.StatusRunning)
	if err != nil {
		return fmt.Errorf("interrupt component runs of %s: %w", r.ID, err)
	}
	return nil
}

// LastRuns implements store.Store: each listed environment's newest run,
// in one query.
func (s *Store) LastRuns(ctx context.Context, envs []string) (map[string]store.Run, error) {
	out := make(map[string]store.Run, len(envs))
	if len(envs) == 0 {
		return out, nil
	}
	runs, err := queryAll(ctx, s.pool, "last runs", scanRun, `SELECT `+runColumns+` FROM runs WHERE seq IN (
		SELECT (SELECT seq FROM runs WHERE env = e.id`+newestFirst+` LIMIT 1) FROM unnest($1::text[]) AS e(id))`, envs)
	if err != nil {
		return nil, err
	}
	for _, r := range runs {
		out[r.Env] = r
	}
	return out, nil
}
