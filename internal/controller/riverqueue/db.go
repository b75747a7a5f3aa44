package riverqueue

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivermigrate"
)

// migrateLock is the advisory lock replicas take to migrate one at a time.
const migrateLock = 0x6b6e69745f72 // "knit_r"

// schema is the queue's own: the runs' events for catch-up (the stored
// component logs stay the record; these go once the leader prunes them),
// and indexes to find a run's job by run ID and environment.
const schema = `
CREATE TABLE IF NOT EXISTS knit_run_events (
	run_id TEXT NOT NULL,
	seq BIGINT NOT NULL,
	event JSONB NOT NULL,
	last BOOLEAN NOT NULL DEFAULT false,
	at TIMESTAMPTZ NOT NULL DEFAULT clock_timestamp(),
	PRIMARY KEY (run_id, seq));
CREATE INDEX IF NOT EXISTS knit_run_events_at ON knit_run_events (at) WHERE last;
CREATE INDEX IF NOT EXISTS river_job_knit_run ON river_job ((args->>'run_id')) WHERE kind = 'knit_run';
CREATE INDEX IF NOT EXISTS river_job_knit_env ON river_job ((args->>'env'), state) WHERE kind = 'knit_run';
`

// migrate brings River's tables and the queue's up to date under a
// session advisory lock, so replicas starting together migrate once.
// River's migrations go one transaction each (one adds an enum value a
// later one uses, which Postgres refuses within one transaction).
func migrate(ctx context.Context, pool *pgxpool.Pool) error {
	m, err := rivermigrate.New(riverpgxv5.New(pool), &rivermigrate.Config{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		return fmt.Errorf("run queue: migrate: %w", err)
	}
	lock, err := pool.Acquire(ctx)
	if err != nil {
		return fmt.Errorf("run queue: migrate: %w", err)
	}
	defer lock.Release()
	if _, err := lock.Exec(ctx, `SELECT pg_advisory_lock($1)`, int64(migrateLock)); err != nil {
		return fmt.Errorf("run queue: migrate: %w", err)
	}
	defer func() {
		_, _ = lock.Exec(context.WithoutCancel(ctx), `SELECT pg_advisory_unlock($1)`, int64(migrateLock))
	}()
	if _, err := m.Migrate(ctx, rivermigrate.DirectionUp, nil); err != nil {
		return fmt.Errorf("run queue: migrate the database: %w", err)
	}
	if _, err := pool.Exec(ctx, schema+clientsSchema); err != nil {
		return fmt.Errorf("run queue: migrate the database: %w", err)
	}
	return nil
}

// queuedJob reads run id's job: its args, and whether it still waits.
func (q *Queue) queuedJob(ctx context.Context, id string) (runArgs, bool, error) {
	var (
		a     runArgs
		raw   []byte
		state string
	)
	err := q.pool.QueryRow(ctx, `SELECT args, state FROM river_job WHERE kind = $1 AND args->>'run_id' = $2
		ORDER BY id DESC LIMIT 1`, jobKind, id).Scan(&raw, &state)
	if err != nil {
		return a, false, err
	}
	if err := json.Unmarshal(raw, &a); err != nil {
		return a, false, err
	}
	switch state {
	case "available", "scheduled", "retryable", "pending":
		return a, true, nil
	case "running":
		// Worked, but is its run recorded yet? Until its first event it
		// still reads as queued.
		var seen bool
		err := q.pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM knit_run_events WHERE run_id = $1)`, id).Scan(&seen)
		return a, !seen, err
	}
	return a, false, nil
}

// jobID is run id's job in River's table, and its environment.
func (q *Queue) jobID(ctx context.Context, id string) (jobID int64, env string, err error) {
	err = q.pool.QueryRow(ctx, `SELECT id, args->>'env' FROM river_job WHERE kind = $1 AND args->>'run_id' = $2
		ORDER BY id DESC LIMIT 1`, jobKind, id).Scan(&jobID, &env)
	return jobID, env, err
}

// redact keeps a connection error from quoting the DSN (the store has
// already opened the same one, so this is rare).
func redact(err error) error {
	var pe *pgconn.ParseConfigError
	if errors.As(err, &pe) {
		return errors.New("the store's DSN does not parse (not shown)")
	}
	return err
}

// levelAtLeast drops River's records below min: its info lines are
// per-job noise beside knit's own.
type levelAtLeast struct {
	slog.Handler
	min slog.Level
}

func (h levelAtLeast) Enabled(ctx context.Context, l slog.Level) bool {
	return l >= h.min && h.Handler.Enabled(ctx, l)
}

// Handle drops River's warnings that a job outlived its timeout: knit's
// jobs do, by design (see worker.Timeout); the rest goes on.
func (h levelAtLeast) Handle(ctx context.Context, r slog.Record) error {
	if strings.Contains(r.Message, "Job appears to be stuck") || strings.Contains(r.Message, "Job became unstuck") {
		return nil
	}
	return h.Handler.Handle(ctx, r)
}

func (h levelAtLeast) WithAttrs(as []slog.Attr) slog.Handler {
	return levelAtLeast{h.Handler.WithAttrs(as), h.min}
}

func (h levelAtLeast) WithGroup(name string) slog.Handler {
	return levelAtLeast{h.Handler.WithGroup(name), h.min}
}
