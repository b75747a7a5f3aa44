// Package riverqueue is knit serve's run queue when replicas share a
// PostgreSQL store: every run is a River job (github.com/riverqueue/river)
// in the store's database, unique by run ID, worked by at most Max
// workers per replica through the same engine path as the in-process
// queue (internal/controller/runqueue, which stays for SQLite). Its
// events go through the database too (a table for catch-up, LISTEN/NOTIFY
// for live), so any replica streams a run executing on another, and the
// leader (Reap) resumes the runs of a replica that died.
//
// The queue does not fence: a run takes its environment's lock in the
// store, as everywhere, and every write of the run is fenced by it.
package riverqueue

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"

	"knit.dev/knit/internal/controller/runqueue"
	"knit.dev/knit/internal/knit"
)

// Config is how a Queue runs.
type Config struct {
	// Max bounds the runs this replica executes at once (default 4).
	Max int
	// Actor names the server in the audit trail of runs it resumes.
	Actor  string
	Logger *slog.Logger
	// Lease is the run locks' lease (knit.Config.LockLease; default 60s):
	// Reap resumes a run whose lease ended this long ago, and River
	// rescues a job stuck in a dead replica after twice it.
	Lease time.Duration
	// LockRetry is how long a run whose environment is locked waits
	// before it tries again (default 2s).
	LockRetry time.Duration
}

// Queue is the run queue in the database. It implements the interfaces
// the server and the controllers take (see controller.Queue).
type Queue struct {
	k     *knit.Knit
	pool  *pgxpool.Pool
	river *river.Client[pgx.Tx]
	hub   *hub
	log   *slog.Logger
	cfg   Config
	id    string // this replica, in River's attempted_by and the logs

	stopping atomic.Bool // Run's context ended: interrupted runs are resumed elsewhere
	active   atomic.Int64

	mu        sync.Mutex
	jobs      map[string]*runqueue.Job // runs queued or running here, or watched
	onStart   map[string]func(error)   // EnqueueWith's callbacks, by run ID
	listeners []func(runqueue.Outcome)
	ended     []func(env string)
}

// Conns is how many connections a queue of at most max runs at once
// (Config.Max; 0: the default) holds from the pool it shares with the
// store, at most: two stay LISTENing (River's notifier, the hub), each
// worker publishes its run's events, and streams read them. The store's
// pool is sized with them (postgres.Options.ExtraConns).
func Conns(max int) int32 {
	if max <= 0 {
		max = defaultMax
	}
	return int32(2*max + 6)
}

// defaultMax is Config.Max's default.
const defaultMax = 4

// Open builds the queue over k on pool, the PostgreSQL store's connection
// pool (postgres.Store.Pool, sized for it with Conns): the store's
// migrations have made River's tables and the queue's own, and Open fails
// if they have not. Nothing is worked before Run; the pool stays the
// store's to close.
func Open(ctx context.Context, pool *pgxpool.Pool, k *knit.Knit, cfg Config) (*Queue, error) {
	if cfg.Max <= 0 {
		cfg.Max = defaultMax
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Lease <= 0 {
		cfg.Lease = 60 * time.Second
	}
	if cfg.LockRetry <= 0 {
		cfg.LockRetry = 2 * time.Second
	}
	if err := checkSchema(ctx, pool); err != nil {
		return nil, err
	}
	host, _ := os.Hostname()
	// The ID is this process's only: a restarted container has the same
	// host name and PID, and must not pass for the replica that died.
	q := &Queue{k: k, pool: pool, log: cfg.Logger, cfg: cfg, id: fmt.Sprintf("%s-%d-%s", host, os.Getpid(), rand.Text()[:8]),
		jobs: map[string]*runqueue.Job{}, onStart: map[string]func(error){}}
	q.hub = newHub(pool, cfg.Logger, q.notified, q.recheck)
	workers := river.NewWorkers()
	river.AddWorker(workers, &worker{q: q})
	quiet := slog.New(levelAtLeast{cfg.Logger.Handler(), slog.LevelWarn})
	client, err := river.NewClient(riverpgxv5.New(pool), &river.Config{
		ID:                   q.id,
		Queues:               map[string]river.QueueConfig{river.QueueDefault: {MaxWorkers: cfg.Max}},
		Workers:              workers,
		JobTimeout:           cfg.Lease, // renewed while the run goes (see beat)
		RescueStuckJobsAfter: 2 * cfg.Lease,
		Logger:               quiet,
	})
	if err != nil {
		return nil, fmt.Errorf("run queue: %w", err)
	}
	q.river = client
	return q, nil
}

// Run works jobs until ctx ends, then interrupts the runs going (each is
// queued again as a resume, for another replica) and waits for them.
func (q *Queue) Run(ctx context.Context) error {
	hubDone := make(chan struct{})
	hubCtx, stopHub := context.WithCancel(context.WithoutCancel(ctx))
	go func() { defer close(hubDone); q.hub.run(hubCtx) }()
	defer func() { stopHub(); <-hubDone }()
	// Alive before the first job is taken; the beats stop once the jobs
	// are over.
	if err := q.beat(ctx); err != nil {
		return fmt.Errorf("run queue: say this replica is alive: %w", err)
	}
	beatDone := make(chan struct{})
	beatCtx, stopBeat := context.WithCancel(context.WithoutCancel(ctx))
	go func() { defer close(beatDone); q.heartbeat(beatCtx) }()
	defer func() { stopBeat(); <-beatDone }()
	if err := q.river.Start(context.WithoutCancel(ctx)); err != nil {
		return fmt.Errorf("run queue: %w", err)
	}
	<-ctx.Done()
	q.stopping.Store(true)
	stopCtx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := q.river.StopAndCancel(stopCtx); err != nil {
		return fmt.Errorf("run queue: stop: %w", err)
	}
	return nil
}

// Resume does nothing here: the leader's Reap resumes what a dead
// replica left, whichever replica starts first.
func (q *Queue) Resume(context.Context) error { return nil }

// OnFinish adds a listener told of the outcome of every run this replica
// executes, in the goroutine that ran it.
func (q *Queue) OnFinish(fn func(runqueue.Outcome)) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.listeners = append(q.listeners, fn)
}

// OnEnded adds a listener told of the end of every run, wherever it ran
// (the leader's schedulers follow ends elsewhere with it).
func (q *Queue) OnEnded(fn func(env string)) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.ended = append(q.ended, fn)
}

// Enqueue queues a run of env and returns its ID.
func (q *Queue) Enqueue(req knit.RunRequest, env string) (string, error) {
	return q.EnqueueWith(req, env, nil)
}

// EnqueueWith is Enqueue with onStart told, in this process, whether the
// run started (nil) or why not, wherever it runs.
func (q *Queue) EnqueueWith(req knit.RunRequest, env string, onStart func(error)) (string, error) {
	if q.stopping.Load() {
		return "", runqueue.ErrStopped
	}
	if req.RunID == "" {
		req.RunID = knit.NewRunID()
	}
	a, err := argsOf(req, env)
	if err != nil {
		return "", err
	}
	j := runqueue.NewJob(req.RunID, env, req, time.Now())
	q.mu.Lock()
	q.jobs[j.ID] = j
	if onStart != nil {
		q.onStart[j.ID] = onStart
	}
	q.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := q.river.Insert(ctx, a, nil); err != nil {
		q.forget(j.ID)
		return "", fmt.Errorf("queue a run of %s: %w", env, err)
	}
	return j.ID, nil
}

// forget drops what this replica knows of run id.
func (q *Queue) forget(id string) {
	q.mu.Lock()
	defer q.mu.Unlock()
	delete(q.jobs, id)
	delete(q.onStart, id)
}

// started tells the run's job and its EnqueueWith callback, here, that
// it started (err nil) or could not.
func (q *Queue) started(id string, err error) {
	q.mu.Lock()
	j := q.jobs[id]
	fn := q.onStart[id]
	delete(q.jobs, id)
	delete(q.onStart, id)
	q.mu.Unlock()
	if j != nil {
		j.Start(nil, err)
	}
	if fn != nil {
		fn(err)
	}
}

// Job returns a run still queued, in any replica, as a job whose Started
// closes when it starts wherever it runs; false once it started (its
// record tells the rest) or when no such run was queued.
func (q *Queue) Job(id string) (*runqueue.Job, bool) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	q.mu.Lock()
	j, ok := q.jobs[id]
	q.mu.Unlock()
	if ok {
		return q.unlessRecorded(ctx, j)
	}
	a, waiting, err := q.queuedJob(ctx, id)
	if err != nil || !waiting {
		if err != nil && !errors.Is(err, pgx.ErrNoRows) {
			q.log.Warn("run queue: look a run up", "run", id, "err", err)
		}
		return nil, false
	}
	req, _ := a.request()
	j = runqueue.NewJob(id, a.Env, req, time.Now())
	q.mu.Lock()
	if have, ok := q.jobs[id]; ok {
		j = have
	} else {
		q.jobs[id] = j
	}
	q.mu.Unlock()
	return j, true
}

// unlessRecorded is j, a job this replica knows as waiting, unless its
// run is recorded: then it started, and j learns so here. The notice
// that a run started rides on its first events; a replica killed before
// they reached the database sends none.
func (q *Queue) unlessRecorded(ctx context.Context, j *runqueue.Job) (*runqueue.Job, bool) {
	if q.startedIfRecorded(ctx, j.ID) {
		return nil, false
	}
	return j, true
}

// startedIfRecorded tells run id's job here that it started, if the
// store has its record, and reports whether it did.
func (q *Queue) startedIfRecorded(ctx context.Context, id string) bool {
	recorded, err := q.recorded(ctx, id)
	if err != nil {
		q.log.Warn("run queue: look a run up", "run", id, "err", err)
		return false
	}
	if recorded {
		q.started(id, nil)
	}
	return recorded
}

// recheck tells every job this replica knows as waiting whose run is
// recorded that it started: the hub calls it as it starts listening, since
// notices sent while it was not are lost.
func (q *Queue) recheck(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	q.mu.Lock()
	ids := slices.Collect(maps.Keys(q.jobs))
	q.mu.Unlock()
	for _, id := range ids {
		q.startedIfRecorded(ctx, id)
	}
}

// Queued reports whether run id waits in the queue, and its environment.
func (q *Queue) Queued(id string) (string, bool) {
	j, ok := q.Job(id)
	if !ok {
		return "", false
	}
	return j.Env, true
}

// Cancel stops run id: a queued one never starts, a running one is
// interrupted, in whichever replica it runs (River tells it).
func (q *Queue) Cancel(id string) error {
	if r, ok := q.k.Lookup(id); ok {
		r.Cancel()
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	jobID, env, err := q.jobID(ctx, id)
	if errors.Is(err, pgx.ErrNoRows) {
		return q.k.Cancel(id) // not a job: the library says what it knows
	}
	if err != nil {
		return err
	}
	row, err := q.river.JobCancel(ctx, jobID)
	if err != nil {
		return fmt.Errorf("cancel run %s: %w", id, err)
	}
	if row.State == "cancelled" {
		// It never ran: whoever queued it learns so.
		return q.hub.notify(ctx, note{Run: id, Env: env, Refused: runqueue.ErrCancelled.Error()})
	}
	return nil
}

// Depth is the number of runs waiting in the queue (every replica's) and
// of runs this replica executes.
func (q *Queue) Depth() (queued, running int) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := q.pool.QueryRow(ctx, `SELECT count(*) FROM river_job WHERE kind = $1
		AND state IN ('available', 'scheduled', 'retryable', 'pending')`, jobKind).Scan(&queued); err != nil {
		q.log.Warn("run queue: depth", "err", err)
	}
	return queued, int(q.active.Load())
}

// PendingFor reports whether a run of env waits in the queue, in any
// replica.
func (q *Queue) PendingFor(env string) bool {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var ok bool
	if err := q.pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM river_job WHERE kind = $1 AND args->>'env' = $2
		AND state IN ('available', 'scheduled', 'retryable', 'pending'))`, jobKind, env).Scan(&ok); err != nil {
		q.log.Warn("run queue: pending runs", "env", env, "err", err)
	}
	return ok
}

// tell hands o to the listeners.
func (q *Queue) tell(o runqueue.Outcome) {
	q.mu.Lock()
	ls := q.listeners
	q.mu.Unlock()
	for _, fn := range ls {
		fn(o)
	}
}
