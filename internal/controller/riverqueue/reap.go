package riverqueue

import (
	"context"
	"time"

	"knit.dev/knit/internal/engine"
	"knit.dev/knit/internal/knit"
	"knit.dev/knit/internal/store"
)

// knitRequest is the request type jobs carry once decoded.
type knitRequest = knit.RunRequest

// eventsKept is how long a finished run's events stay in the table for
// late streams; the run's record keeps its logs for good.
const eventsKept = 10 * time.Minute

// Reap runs on the leader until ctx ends: every third of a lease it
// queues a resume of each apply or teardown no live replica carries any
// more (the lock's lease ended, or its holder on this host is gone), and
// prunes the events of runs long over. The resume takes the lock over
// (the store judges the lease) and records the dead run interrupted
// before anything runs, so nothing is applied twice at once.
func (q *Queue) Reap(ctx context.Context) error {
	t := time.NewTicker(q.cfg.Lease / 3)
	defer t.Stop()
	for {
		q.reapOnce(ctx)
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

func (q *Queue) reapOnce(ctx context.Context) {
	runs, err := q.k.StrandedRuns(ctx, q.cfg.Lease/4)
	if err != nil {
		if ctx.Err() == nil {
			q.log.Error("run queue: look for stranded runs", "err", err)
		}
		return
	}
	for _, r := range runs {
		kind := r.Kind
		if kind != engine.KindApply && kind != engine.KindTeardown {
			continue // a plan or a drift check changes nothing: the next run of the env closes its record
		}
		q.resume(r.ID, r.Env, kind, "resume after the replica running it stopped renewing its lock")
	}
	if _, err := q.pool.Exec(ctx, `DELETE FROM knit_run_events WHERE run_id IN (
		SELECT run_id FROM knit_run_events WHERE last AND at < clock_timestamp() - $1::interval)`,
		eventsKept.String()); err != nil && ctx.Err() == nil {
		q.log.Warn("run queue: prune run events", "err", err)
	}
}

// resume queues the run that resumes run id (once, however often asked:
// its ID is id's resumedID).
func (q *Queue) resume(id, env string, kind store.RunKind, reason string) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	a := runArgs{RunID: resumedID(id), Env: env, Resumes: id, RunKind: kind, EnvRef: env, Actor: q.cfg.Actor,
		Source: "recovery", Reason: reason}
	res, err := q.river.Insert(ctx, a, nil)
	if err != nil {
		q.log.Error("run queue: queue a resume", "run", id, "env", env, "err", err)
		return
	}
	if !res.UniqueSkippedAsDuplicate {
		q.log.Info("resuming an interrupted run", "run", id, "env", env, "kind", kind, "as", a.RunID)
	}
}
