package riverqueue

import (
	"context"
	"encoding/json"
	"time"
)

// A replica says it is alive by renewing its row in knit_river_clients
// (a table of the store's migrations)
// every third of a lease, by the database's clock, and with the same
// statement the jobs it works: their attempted_at moves on, so River's
// rescuer (which rescues a job whose attempt is older than its timeout
// and RescueStuckJobsAfter) leaves a live run alone however long it
// goes, and rescues the jobs of a replica that died. The leader's Reap
// does not wait for the rescuer: it cancels the jobs of a replica that
// stopped renewing (clientDeadAfter) before it resumes their runs.

// beat renews this replica's row and its running jobs' attempts.
func (q *Queue) beat(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, q.cfg.Lease/3)
	defer cancel()
	_, err := q.pool.Exec(ctx, `WITH me AS (
			INSERT INTO knit_river_clients (id, seen) VALUES ($1, clock_timestamp())
			ON CONFLICT (id) DO UPDATE SET seen = clock_timestamp() RETURNING id)
		UPDATE river_job SET attempted_at = clock_timestamp()
		WHERE kind = $2 AND state = 'running' AND attempted_by[array_length(attempted_by, 1)] = (SELECT id FROM me)`,
		q.id, jobKind)
	return err
}

// heartbeat beats every third of a lease until ctx ends, then removes
// this replica's row (its jobs are over by then: Run waits for them).
func (q *Queue) heartbeat(ctx context.Context) {
	t := time.NewTicker(q.cfg.Lease / 3)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			dctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			if _, err := q.pool.Exec(dctx, `DELETE FROM knit_river_clients WHERE id = $1`, q.id); err != nil {
				q.log.Warn("run queue: forget this replica", "err", err)
			}
			return
		case <-t.C:
			if err := q.beat(ctx); err != nil && ctx.Err() == nil {
				q.log.Warn("run queue: say this replica is alive", "err", err)
			}
		}
	}
}

// clientDeadAfter is how long a replica's row goes unrenewed before its
// jobs are another's to resume: its lease, and a quarter for a slow beat.
func (q *Queue) clientDeadAfter() time.Duration { return q.cfg.Lease + q.cfg.Lease/4 }

// cancelDeadJobs cancels the jobs still running for replicas that
// stopped renewing their row (killed, frozen, cut off from the
// database), and returns their args: what Reap resumes.
func (q *Queue) cancelDeadJobs(ctx context.Context) ([]runArgs, error) {
	rows, err := q.pool.Query(ctx, `UPDATE river_job j SET state = 'cancelled', finalized_at = clock_timestamp()
		WHERE kind = $1 AND state = 'running' AND NOT EXISTS (
			SELECT 1 FROM knit_river_clients c WHERE c.id = j.attempted_by[array_length(j.attempted_by, 1)]
			AND c.seen > clock_timestamp() - $2 * interval '1 second')
		RETURNING args, attempted_by[array_length(attempted_by, 1)]`, jobKind, q.clientDeadAfter().Seconds())
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []runArgs
	for rows.Next() {
		var (
			raw    []byte
			client *string
		)
		if err := rows.Scan(&raw, &client); err != nil {
			return out, err
		}
		var a runArgs
		if err := json.Unmarshal(raw, &a); err != nil {
			q.log.Warn("run queue: a dead replica's job does not decode", "err", err)
			continue
		}
		by := ""
		if client != nil {
			by = *client
		}
		q.log.Info("run queue: cancelled the job of a replica that stopped renewing", "run", a.RunID, "env", a.Env, "replica", by)
		out = append(out, a)
	}
	return out, rows.Err()
}
