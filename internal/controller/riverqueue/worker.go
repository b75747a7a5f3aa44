package riverqueue

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/riverqueue/river"

	"knit.dev/knit/internal/controller/runqueue"
	"knit.dev/knit/internal/engine"
	"knit.dev/knit/internal/knit"
	"knit.dev/knit/internal/store"
	"knit.dev/knit/internal/view"
)

// worker executes run jobs: at most Config.Max at once per replica
// (River's MaxWorkers), each through knit's engine, which takes the
// environment's lock in the store before anything runs.
type worker struct {
	river.WorkerDefaults[runArgs]
	q *Queue
}

// Timeout is a lease: finite, so River's rescuer rescues the job of a
// replica that died (its attempt stops being renewed, see beat). A live
// run is not bound by it: the replica renews its jobs' attempts, and the
// run follows the job's cancellation, not its deadline (runContext).
func (w *worker) Timeout(*river.Job[runArgs]) time.Duration { return w.q.cfg.Lease }

// runContext is ctx without its deadline (River's job timeout): the run
// ends by itself, the engine bounds its tools; a cancellation (the
// queue's stop, a cancel of the job) still ends it.
func runContext(ctx context.Context) (context.Context, context.CancelFunc) {
	run, cancel := context.WithCancel(context.WithoutCancel(ctx))
	stop := context.AfterFunc(ctx, func() {
		if !errors.Is(ctx.Err(), context.DeadlineExceeded) {
			cancel()
		}
	})
	return run, func() { stop(); cancel() }
}

// Work executes the job's run once. A job whose run is already recorded
// was worked before, by a replica that died or whose River bookkeeping
// was lost: its record is the truth, and the leader resumes it if no one
// carries it (Reap). A locked environment snoozes the job.
func (w *worker) Work(jobCtx context.Context, job *river.Job[runArgs]) error {
	ctx, cancel := runContext(jobCtx)
	defer cancel()
	q, a := w.q, job.Args
	if _, err := q.k.RunRecord(ctx, a.RunID); err == nil {
		return nil
	} else if !errors.Is(err, store.ErrNotFound) {
		return err
	}
	if a.Resumes != "" && !q.stillToResume(ctx, a.Resumes) {
		return nil
	}
	req, err := a.request()
	if err != nil {
		q.refused(ctx, a, err)
		return nil
	}
	q.active.Add(1)
	defer q.active.Add(-1)
	start := time.Now()
	run, err := knit.NewRun(q.k, req).Start(ctx)
	if errors.Is(err, engine.ErrLocked) && !q.stopping.Load() {
		d := lockBackoff(q.cfg.LockRetry, job.Metadata)
		q.log.Info("run queue: the environment is locked; trying again", "run", a.RunID, "env", a.Env, "in", d, "err", err)
		return river.JobSnooze(d)
	}
	if err != nil {
		q.refused(ctx, a, err)
		q.tell(runqueue.Outcome{Job: w.job(a, req, nil, err), Refused: err})
		return nil
	}
	published := q.publish(run)
	res, err := run.Wait(context.Background())
	<-published
	if err != nil {
		q.log.Warn("run failed", "run", a.RunID, "env", a.Env, "err", err)
	}
	if q.stopping.Load() && res != nil && res.Status == store.StatusInterrupted {
		q.resume(view.Run{ID: a.RunID, Env: a.Env, Kind: a.RunRequest.Kind, Revision: res.Revision}, "resume after the replica running it shut down")
	}
	q.tell(runqueue.Outcome{Job: w.job(a, req, run, nil), Result: res, Took: time.Since(start)})
	return nil
}

// job is the run as the listeners see it.
func (w *worker) job(a runArgs, req knitRequest, run *engine.Run, err error) *runqueue.Job {
	j := runqueue.NewJob(a.RunID, a.Env, req, time.Now())
	j.Start(run, err)
	return j
}

// refused tells whoever queued the run that it could not start.
func (q *Queue) refused(ctx context.Context, a runArgs, err error) {
	q.log.Warn("run could not start", "run", a.RunID, "env", a.Env, "kind", a.RunRequest.Kind, "err", err)
	nctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	if nerr := q.hub.notify(nctx, note{Run: a.RunID, Env: a.Env, Refused: err.Error()}); nerr != nil {
		q.log.Warn("run queue: tell that a run could not start", "run", a.RunID, "err", nerr)
	}
}

// stillToResume reports whether run id is still unfinished business: it
// is recorded running (stranded) or interrupted. One that ended by itself
// meanwhile needs no resume.
func (q *Queue) stillToResume(ctx context.Context, id string) bool {
	r, err := q.k.RunRecord(ctx, id)
	if err != nil {
		return !errors.Is(err, store.ErrNotFound)
	}
	return r.Status == store.StatusRunning || r.Status == store.StatusInterrupted
}

// refusal is a refusal as the queue's callers know it.
func refusal(msg string) error {
	if msg == runqueue.ErrCancelled.Error() {
		return runqueue.ErrCancelled
	}
	return errors.New(msg)
}

// maxLockRetry bounds the wait between tries of a locked environment.
const maxLockRetry = time.Minute

// lockBackoff doubles the wait after each try of a locked environment
// (River counts the job's snoozes in its metadata), from first up to
// maxLockRetry: a long CLI apply costs a few refusals, not one every
// first.
func lockBackoff(first time.Duration, metadata []byte) time.Duration {
	var m struct {
		Snoozes int `json:"snoozes"`
	}
	_ = json.Unmarshal(metadata, &m)
	d := first
	for range min(m.Snoozes, 10) {
		d *= 2
	}
	return min(d, maxLockRetry)
}
