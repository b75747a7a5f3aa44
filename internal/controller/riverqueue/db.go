package riverqueue

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"

	"github.com/jackc/pgx/v5/pgxpool"

	"knit.dev/knit/internal/store"
)

// tables are those the queue works in, which the PostgreSQL store's
// migrations create (internal/store/postgres/migrations/0024_run_queue.sql,
// River's with River's migrator): the queue executes no DDL.
var tables = []string{"river_job", "knit_run_events", "knit_river_clients"}

// checkSchema fails, saying what to do, unless the store's migrations
// have made the queue's tables in pool's database.
func checkSchema(ctx context.Context, pool *pgxpool.Pool) error {
	var missing []string
	for _, t := range tables {
		var found bool
		if err := pool.QueryRow(ctx, `SELECT to_regclass($1) IS NOT NULL`, t).Scan(&found); err != nil {
			return fmt.Errorf("run queue: read the database's tables: %w", err)
		}
		if !found {
			missing = append(missing, t)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("run queue: the database has no %s: the PostgreSQL store's migrations make them; open the queue on the pool of a store opened on this database (postgres.Store.Pool)", strings.Join(missing, ", "))
	}
	return nil
}

// queuedJob reads run id's job: its args, and whether it still waits. A
// job waits until its run is recorded (the engine records a run as it
// takes the environment's lock, before anything runs): whatever became
// of the job since, running for a replica killed before its first event,
// re-queued by River's rescuer, or cancelled by the leader, a recorded
// run started, and its record tells the rest.
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
	case "available", "scheduled", "retryable", "pending", "running":
		recorded, err := q.recorded(ctx, id)
		return a, !recorded, err
	}
	return a, false, nil
}

// recorded reports whether run id has a record in the store: it started.
func (q *Queue) recorded(ctx context.Context, id string) (bool, error) {
	_, err := q.k.RunRecord(ctx, id)
	if errors.Is(err, store.ErrNotFound) {
		return false, nil
	}
	return err == nil, err
}

// jobID is run id's job in River's table, and its environment.
func (q *Queue) jobID(ctx context.Context, id string) (jobID int64, env string, err error) {
	err = q.pool.QueryRow(ctx, `SELECT id, args->>'env' FROM river_job WHERE kind = $1 AND args->>'run_id' = $2
		ORDER BY id DESC LIMIT 1`, jobKind, id).Scan(&jobID, &env)
	return jobID, env, err
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
