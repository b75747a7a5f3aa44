package riverqueue

import (
	"context"
	"errors"
	"fmt"
	"time"

	"knit.dev/knit/internal/knit"
	"knit.dev/knit/internal/store"
	"knit.dev/knit/internal/view"
)

// knitRequest is the request type jobs carry once decoded.
type knitRequest = knit.RunRequest

// eventsKept is how long a finished run's events stay in the table for
// late streams; the run's record keeps its logs for good.
const eventsKept = 10 * time.Minute

// Reap runs on the leader until ctx ends: every third of a lease it
// cancels the jobs of replicas that stopped renewing (cancelDeadJobs),
// queues a resume of each run no live replica carries any more (the
// lock's lease ended, or its holder on this host is gone) as
// knit.ResumeKind says, queues again a dead replica's job whose run never
// started, and prunes the events of runs long over. The resume takes the
// lock over (the store judges the lease) and records the dead run
// interrupted before anything runs, so nothing is applied twice at once.
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
	dead, err := q.cancelDeadJobs(ctx)
	if err != nil && ctx.Err() == nil {
		q.log.Error("run queue: cancel the jobs of dead replicas", "err", err)
	}
	for _, a := range dead {
		q.requeue(ctx, a)
	}
	runs, err := knit.NewRecords(q.k).StrandedRuns(ctx, q.cfg.Lease/4)
	if err != nil {
		if ctx.Err() == nil {
			q.log.Error("run queue: look for stranded runs", "err", err)
		}
		return
	}
	for _, r := range runs {
		q.resume(r, "resume after the replica running it stopped renewing its lock")
	}
	if _, err := q.pool.Exec(ctx, `DELETE FROM knit_run_events WHERE run_id IN (
		SELECT run_id FROM knit_run_events WHERE last AND at < clock_timestamp() - $1 * interval '1 second')`,
		eventsKept.Seconds()); err != nil && ctx.Err() == nil {
		q.log.Warn("run queue: prune run events", "err", err)
	}
}

// requeue follows a dead replica's cancelled job: a run it recorded is
// the stranded runs' business (its record says running, or it is over);
// one it never started is queued again: a resume as a resume of the same
// run, anything else as the same job (a cancelled job does not count for
// uniqueness).
func (q *Queue) requeue(ctx context.Context, a runArgs) {
	if _, err := q.k.RunRecord(ctx, a.RunID); err == nil || !errors.Is(err, store.ErrNotFound) {
		if err != nil {
			q.log.Error("run queue: look a dead replica's run up", "run", a.RunID, "err", err)
		}
		return
	}
	if a.Resumes != "" {
		// The resume's own kind and target resume it again.
		q.resume(view.Run{ID: a.Resumes, Env: a.Env, Kind: a.RunRequest.Kind, Revision: a.To}, a.Reason)
		return
	}
	ictx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if _, err := q.river.Insert(ictx, a, nil); err != nil {
		q.log.Error("run queue: queue again a dead replica's run", "run", a.RunID, "env", a.Env, "err", err)
		return
	}
	q.log.Info("run queue: queued again a run a dead replica took and never started", "run", a.RunID, "env", a.Env)
}

// resume queues the run that resumes the interrupted run r, as
// knit.ResumeKind says, unless one is queued or going already. Its ID is r's
// resumedID for the attempt: every earlier resume of r that ended
// without finishing it (its replica died before it recorded anything)
// moves the attempt on, so the new one is not a duplicate of the dead
// one; two leaders asking at once ask for the same ID, queued once.
func (q *Queue) resume(r view.Run, reason string) {
	id, env, kind := r.ID, r.Env, r.Kind
	req, ok := knit.ResumeRequest(r, q.cfg.Actor, reason)
	if !ok {
		return // a plan changes nothing: the next run of the env closes its record
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var live, earlier int
	if err := q.pool.QueryRow(ctx, `SELECT count(*) FILTER (WHERE state IN ('available', 'scheduled', 'retryable', 'pending', 'running')),
		count(*) FROM river_job WHERE kind = $1 AND args->>'resumes' = $2`, jobKind, id).Scan(&live, &earlier); err != nil {
		q.log.Error("run queue: look for the resumes of a run", "run", id, "err", err)
		return
	}
	if live > 0 {
		return
	}
	req.RunID = resumedID(id, earlier)
	a, err := argsOf(req, env)
	if err != nil {
		q.log.Error("run queue: queue a resume", "run", id, "env", env, "err", err)
		return
	}
	a.Resumes = id
	res, err := q.river.Insert(ctx, a, nil)
	if err != nil {
		q.log.Error("run queue: queue a resume", "run", id, "env", env, "err", err)
		return
	}
	if res.UniqueSkippedAsDuplicate {
		return
	}
	q.log.Info("resuming an interrupted run", "run", id, "env", env, "kind", kind, "as", req.Kind, "id", a.RunID)
	// r started (it is recorded), but a replica killed before its first
	// event reached the database told no one: whoever queued it learns
	// it now.
	if err := q.hub.notify(ctx, note{Run: id, Env: env}); err != nil {
		q.log.Warn("run queue: tell that an interrupted run had started", "run", id, "err", err)
	}
}

// resumedID is the ID of the attempt'th resume (from 0) of run id: the
// same for every replica that asks, so the job is queued once.
func resumedID(id string, attempt int) string {
	if attempt == 0 {
		return id + "-resumed"
	}
	return fmt.Sprintf("%s-resumed-%d", id, attempt+1)
}
