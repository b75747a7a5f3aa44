package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"knit.dev/knit/internal/store"
)

// CreateRun implements store.Store. The ID must be new; a zero StartedAt
// becomes now.
func (s *Store) CreateRun(ctx context.Context, r store.Run) error {
	if r.ID == "" || r.Env == "" {
		return errors.New("create run: ID and Env are required")
	}
	if r.StartedAt.IsZero() {
		r.StartedAt = s.now()
	}
	return s.write(ctx, func(tx *txn) error { return createRun(ctx, tx, r) })
}

// createRun is CreateRun's write in tx, of a run with its start time.
func createRun(ctx context.Context, tx *txn, r store.Run) error {
	_, err := tx.ExecContext(ctx, `INSERT INTO runs (`+runColumns+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		r.ID, r.Env, r.Kind, r.Revision, r.Status, r.Actor, r.Reason, r.Source, r.Error, r.PID, ts(r.StartedAt), ts(r.FinishedAt), r.SupersededBy, nullBytes(r.Policy))
	if err != nil {
		return fmt.Errorf("create run %s: %w", r.ID, err)
	}
	return nil
}

// FinishRun implements store.Store; a missing run is store.ErrNotFound. It
// refuses (store.ErrLockLost), writing nothing, to finish a run that is no
// longer running (another run found it dead and marked it interrupted) or
// whose environment's lock another run holds. A run whose environment has
// no lock may finish: a run releases its lock as it ends, and a lock that
// no one holds was not taken over.
func (s *Store) FinishRun(ctx context.Context, id string, status store.RunStatus, errMsg string, at time.Time) error {
	return s.write(ctx, func(tx *txn) error {
		_, err := finishRun(ctx, tx, id, status, errMsg, at)
		return err
	})
}

// RecordOutcome implements store.Store: FinishRun, AppendAudit and
// SetEnvironmentStatus in one transaction, so a failure of any part (or a
// crash) leaves all three as they were.
func (s *Store) RecordOutcome(ctx context.Context, o store.RunOutcome) error {
	return s.write(ctx, func(tx *txn) error {
		r, err := finishRun(ctx, tx, o.RunID, o.Status, o.Error, o.At)
		if err != nil {
			return err
		}
		if len(o.Policy) > 0 {
			if _, err := tx.ExecContext(ctx, `UPDATE runs SET policy = ? WHERE id = ?`, []byte(o.Policy), o.RunID); err != nil {
				return fmt.Errorf("record the policy decisions of run %s: %w", o.RunID, err)
			}
		}
		if o.Verification != "" {
			if _, err := tx.ExecContext(ctx, `UPDATE revisions SET verification = ? WHERE env = ? AND number = ?`, o.Verification, r.Env, r.Revision); err != nil {
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
func finishRun(ctx context.Context, tx *txn, id string, status store.RunStatus, errMsg string, at time.Time) (store.Run, error) {
	r, err := scanRun(tx.QueryRowContext(ctx, `SELECT `+runColumns+` FROM runs WHERE id = ?`, id))
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
	res, err := tx.ExecContext(ctx, `UPDATE runs SET status = ?, error = ?, finished_at = ? WHERE id = ?`,
		status, errMsg, ts(at), id)
	return r, affected(res, err, "finish run %s", id)
}

const runColumns = `id, env, kind, revision, status, actor, reason, source, error, pid, started_at, finished_at, superseded_by, policy`

func scanRun(sc rowScanner) (store.Run, error) {
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
	r, err := scanRun(s.q.QueryRowContext(ctx, `SELECT `+runColumns+` FROM runs WHERE id = ?`, id))
	if err != nil {
		return store.Run{}, notFound(err, "run %s", id)
	}
	return r, nil
}

// Runs implements store.Store: newest start first, and of runs started at
// the same time the one created last first. f.Before is a run ID: only
// runs older than it, in that order, are listed; an unknown one is
// store.ErrNotFound. The cursor and the page are read in one snapshot.
func (s *Store) Runs(ctx context.Context, env string, f store.RunFilter) ([]store.Run, error) {
	var runs []store.Run
	scan := func(rows *sql.Rows, err error) error {
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			r, err := scanRun(rows)
			if err != nil {
				return err
			}
			runs = append(runs, r)
		}
		return rows.Err()
	}
	var err error
	if f.Before == "" { // the common case: one query, no transaction
		query, args, qerr := runsQuery(ctx, nil, env, f)
		if err = qerr; err == nil {
			err = scan(s.q.QueryContext(ctx, query, args...))
		}
	} else {
		err = s.read(ctx, func(tx *txn) error {
			query, args, err := runsQuery(ctx, tx, env, f)
			if err != nil {
				return err
			}
			return scan(tx.QueryContext(ctx, query, args...))
		})
	}
	if err != nil {
		return nil, fmt.Errorf("list runs of %q: %w", env, err)
	}
	return runs, nil
}

// runsQuery builds the query for Runs, looking up the cursor f.Before.
func runsQuery(ctx context.Context, tx *txn, env string, f store.RunFilter) (string, []any, error) {
	var where []string
	var args []any
	if env != "" {
		where, args = append(where, "env = ?"), append(args, env)
	}
	if f.Status != "" {
		where, args = append(where, "status = ?"), append(args, f.Status)
	}
	if f.Kind != "" {
		where, args = append(where, "kind = ?"), append(args, f.Kind)
	}
	if len(f.Teams) > 0 {
		cond, targs := envOfTeams("env", f.Teams)
		where, args = append(where, cond), append(args, targs...)
	}
	if f.Before != "" {
		var started sql.NullString
		var rowid int64
		err := tx.QueryRowContext(ctx, `SELECT started_at, rowid FROM runs WHERE id = ?`, f.Before).Scan(&started, &rowid)
		if err != nil {
			return "", nil, notFound(err, "run %s", f.Before)
		}
		if started.Valid {
			where = append(where, "(started_at, rowid) < (?, ?)")
			args = append(args, started.String, rowid)
		} else { // NULL starts sort last; CreateRun no longer writes them
			where = append(where, "started_at IS NULL AND rowid < ?")
			args = append(args, rowid)
		}
	}
	query := `SELECT ` + runColumns + ` FROM runs`
	if len(where) > 0 {
		query += ` WHERE ` + strings.Join(where, " AND ")
	}
	return query + ` ORDER BY started_at DESC, rowid DESC` + limitClause(f.Limit), args, nil
}

// InterruptRuns implements store.Store. Each interrupted run gets an error
// naming its vanished process (unless it already had one), and its
// component runs still running are interrupted too. alive must not be nil.
func (s *Store) InterruptRuns(ctx context.Context, env string, alive func(pid int) bool, at time.Time) ([]string, error) {
	if alive == nil {
		return nil, errors.New("interrupt runs: alive func is nil")
	}
	// Every run starts by asking, and there is rarely a crashed run to
	// mark: look first in a read, which takes no write lock. A run found
	// dead cannot come back to life, so the write below sees it too.
	var found bool
	if err := s.read(ctx, func(tx *txn) error {
		dead, err := deadRuns(ctx, tx, env, alive)
		found = len(dead) > 0
		return err
	}); err != nil {
		return nil, fmt.Errorf("interrupt runs of %s: %w", env, err)
	}
	if !found {
		return nil, nil
	}
	var ids []string
	err := s.write(ctx, func(tx *txn) error {
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
func deadRuns(ctx context.Context, tx *txn, env string, alive func(int) bool) ([]store.Run, error) {
	rows, err := tx.QueryContext(ctx, `SELECT `+runColumns+` FROM runs WHERE env = ? AND status = ?
		ORDER BY started_at, rowid`, env, store.StatusRunning)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var dead []store.Run
	for rows.Next() {
		r, err := scanRun(rows)
		if err != nil {
			return nil, err
		}
		if !alive(r.PID) {
			dead = append(dead, r)
		}
	}
	return dead, rows.Err()
}

func interruptRun(ctx context.Context, tx *txn, r store.Run, at time.Time) error {
	_, err := tx.ExecContext(ctx, `UPDATE runs SET status = ?, error = ?, finished_at = ? WHERE id = ?`,
		store.StatusInterrupted, store.InterruptedError(r), ts(at), r.ID)
	if err != nil {
		return fmt.Errorf("interrupt run %s: %w", r.ID, err)
	}
	_, err = tx.ExecContext(ctx, `UPDATE component_runs SET status = ?, finished_at = ? WHERE run_id = ? AND status = ?`,
		store.StatusInterrupted, ts(at), r.ID, store.StatusRunning)
	if err != nil {
		return fmt.Errorf("interrupt component runs of %s: %w", r.ID, err)
	}
	return nil
}

// lastRunsQuery finds each listed environment's newest run in one query:
// the environments come as a JSON array, so the statement has one shape.
const lastRunsQuery = `SELECT ` + runColumns + ` FROM runs WHERE rowid IN (
	SELECT (SELECT rowid FROM runs WHERE runs.env = e.value ORDER BY started_at DESC, rowid DESC LIMIT 1)
	FROM json_each(?) e)`

// LastRuns implements store.Store.
func (s *Store) LastRuns(ctx context.Context, envs []string) (map[string]store.Run, error) {
	out := make(map[string]store.Run, len(envs))
	if len(envs) == 0 {
		return out, nil
	}
	ids, err := json.Marshal(envs)
	if err != nil {
		return nil, err
	}
	rows, err := s.q.QueryContext(ctx, lastRunsQuery, string(ids))
	if err != nil {
		return nil, fmt.Errorf("last runs: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		r, err := scanRun(rows)
		if err != nil {
			return nil, fmt.Errorf("last runs: %w", err)
		}
		out[r.Env] = r
	}
	return out, rows.Err()
}
