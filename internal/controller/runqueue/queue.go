// Package runqueue is knit serve's fair run queue: every run the API, the
// dashboard, the GitOps reconciler and the drift scheduler start goes
// through it. At most Max runs go at once, fairly across environments:
// each environment has its own FIFO, served round-robin, and one
// environment never has two runs going (its lock would refuse the second
// anyway). Runs start under Run's context, so ending it interrupts them.
package runqueue

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"knit.dev/knit/internal/controller/clock"
	"knit.dev/knit/internal/engine"
	"knit.dev/knit/internal/knit"
	"knit.dev/knit/internal/store"
)

// forgetAfter is how long a finished job stays known by ID: the store has
// its record, the engine its events for a while longer.
const forgetAfter = 10 * time.Minute

// ErrCancelled: a queued job was cancelled before it started.
var ErrCancelled = errors.New("cancelled before it started")

// ErrStopped: the queue's Run has returned (the server is shutting down).
var ErrStopped = errors.New("the server is shutting down")

// Job is one queued run: its ID is handed out at once, before it starts.
type Job struct {
	ID     string
	Env    string
	Req    knit.RunRequest
	Queued time.Time

	started chan struct{} // closed once run or err is set
	run     *engine.Run
	err     error // the run could not start (locked, never applied, …)
	// onStart, when set, learns whether the run started (nil) or why not,
	// including ErrCancelled for a job cancelled while queued. A job still
	// queued when the queue stops never calls it.
	onStart func(err error)
	once    sync.Once // guards started for Start
}

// NewJob is a job of another queue (internal/jobs, where runs are jobs in
// the database): it reads as queued until Start.
func NewJob(id, env string, req knit.RunRequest, queued time.Time) *Job {
	return &Job{ID: id, Env: env, Req: req, Queued: queued, started: make(chan struct{})}
}

// Start records that a NewJob's run started (run, perhaps nil when it
// runs elsewhere) or could not (err). Calls after the first do nothing.
func (j *Job) Start(run *engine.Run, err error) {
	j.once.Do(func() {
		j.run, j.err = run, err
		close(j.started)
	})
}

// Started is closed once the run started or could not (Err).
func (j *Job) Started() <-chan struct{} { return j.started }

// Err is why the run did not start (nil: it started, or has not yet).
// Read it once Started is closed.
func (j *Job) Err() error { return j.err }

// Outcome is how a job ended, for the queue's listeners.
type Outcome struct {
	Job *Job
	// Result is the run's result: nil when it never started (Refused says
	// why) or ended without one.
	Result *engine.Result
	// Refused is why the run could not start (nil: it started).
	Refused error
	// Took is how long the run went.
	Took time.Duration
}

// Config is how a Queue runs.
type Config struct {
	// Max bounds runs at once across environments (default 4).
	Max int
	// Actor names the server in the audit trail of runs it resumes.
	Actor  string
	Logger *slog.Logger
	Clock  clock.Clock
}

// Queue is the fair run queue. Enqueue may be called before Run starts
// (the jobs wait) and from any goroutine; once Run has returned, Enqueue
// fails with ErrStopped.
type Queue struct {
	k     *knit.Knit
	log   *slog.Logger
	clock clock.Clock
	max   int
	actor string

	mu      sync.Mutex
	ctx     context.Context   // Run's, nil before it starts
	stopped bool              // Run's context ended
	pending map[string][]*Job // env → jobs waiting
	order   []string          // envs with pending jobs, in turn order
	busy    map[string]bool   // env → a run is going
	jobs    map[string]*Job   // every job not yet forgotten, by ID
	forget  map[string]clock.Timer
	active  int
	done    sync.WaitGroup
	// listeners learn each job's outcome (metrics, notifications, drift).
	listeners []func(Outcome)
}

// New is a queue over k. Nothing starts before Run.
func New(k *knit.Knit, cfg Config) *Queue {
	if cfg.Max <= 0 {
		cfg.Max = 4
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	return &Queue{k: k, log: cfg.Logger, clock: clock.Or(cfg.Clock), max: cfg.Max, actor: cfg.Actor,
		pending: map[string][]*Job{}, busy: map[string]bool{}, jobs: map[string]*Job{}, forget: map[string]clock.Timer{}}
}

// OnFinish adds a listener told of every job's outcome, in the goroutine
// that ran it. Add listeners before Run.
func (q *Queue) OnFinish(fn func(Outcome)) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.listeners = append(q.listeners, fn)
}

// Run starts queued runs until ctx ends, then waits for the runs going
// (ctx's end interrupts them) and drops its timers: nothing of the queue
// outlives Run. It returns nil once stopped.
func (q *Queue) Run(ctx context.Context) error {
	q.mu.Lock()
	if q.ctx != nil {
		q.mu.Unlock()
		return errors.New("run queue: Run called twice")
	}
	q.ctx = ctx
	q.mu.Unlock()
	q.dispatch()
	<-ctx.Done()
	q.mu.Lock()
	q.stopped = true
	q.mu.Unlock()
	q.done.Wait()
	q.mu.Lock()
	for id, t := range q.forget {
		t.Stop()
		delete(q.forget, id)
	}
	q.mu.Unlock()
	return nil
}

// Enqueue adds a run of env and returns its ID: req.RunID when set, else
// a new one.
func (q *Queue) Enqueue(req knit.RunRequest, env string) (string, error) {
	return q.EnqueueWith(req, env, nil)
}

// EnqueueWith is Enqueue with a callback told whether the run started
// (see Job.onStart).
func (q *Queue) EnqueueWith(req knit.RunRequest, env string, onStart func(error)) (string, error) {
	if req.RunID == "" { // a request may name its run (a rollout's step, recorded under that ID)
		req.RunID = knit.NewRunID()
	}
	j := &Job{ID: req.RunID, Env: env, Req: req, Queued: q.clock.Now(), started: make(chan struct{}), onStart: onStart}
	q.mu.Lock()
	if q.stopping() {
		q.mu.Unlock()
		return "", ErrStopped
	}
	q.jobs[j.ID] = j
	if len(q.pending[env]) == 0 {
		q.order = append(q.order, env)
	}
	q.pending[env] = append(q.pending[env], j)
	q.mu.Unlock()
	q.dispatch()
	return j.ID, nil
}

// Job returns a queued, running or recently finished job by ID.
func (q *Queue) Job(id string) (*Job, bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	j, ok := q.jobs[id]
	return j, ok
}

// Queued reports whether the queue knows run id (queued, running or
// lately finished), and its environment.
func (q *Queue) Queued(id string) (env string, ok bool) {
	j, ok := q.Job(id)
	if !ok {
		return "", false
	}
	return j.Env, true
}

// dispatch starts what may start now.
func (q *Queue) dispatch() {
	q.mu.Lock()
	defer q.mu.Unlock()
	for q.ctx != nil && !q.stopping() && q.active < q.max {
		j := q.next()
		if j == nil {
			return
		}
		q.active++
		q.busy[j.Env] = true
		q.done.Add(1)
		go q.execute(q.ctx, j)
	}
}

// stopping reports whether Run's context has ended: nothing more is
// taken or started (q.mu is held).
func (q *Queue) stopping() bool {
	return q.stopped || (q.ctx != nil && q.ctx.Err() != nil)
}

// next pops the first job of the first environment in turn that is not
// busy, and moves that environment to the back of the turn order.
func (q *Queue) next() *Job {
	for i, env := range q.order {
		if q.busy[env] {
			continue
		}
		jobs := q.pending[env]
		j := jobs[0]
		q.pending[env] = jobs[1:]
		q.order = append(q.order[:i:i], q.order[i+1:]...)
		if len(q.pending[env]) > 0 {
			q.order = append(q.order, env)
		} else {
			delete(q.pending, env)
		}
		return j
	}
	return nil
}

func (q *Queue) execute(ctx context.Context, j *Job) {
	defer q.done.Done()
	defer func() {
		q.mu.Lock()
		q.active--
		q.busy[j.Env] = false
		q.forgetLater(j.ID)
		q.mu.Unlock()
		q.dispatch()
	}()
	start := q.clock.Now()
	r, err := knit.NewRun(q.k, j.Req).Start(ctx)
	j.run, j.err = r, err
	close(j.started)
	if j.onStart != nil {
		j.onStart(err)
	}
	if err != nil {
		q.log.Warn("run could not start", "run", j.ID, "env", j.Env, "kind", j.Req.Kind, "err", err)
		q.tell(Outcome{Job: j, Refused: err})
		return
	}
	res, err := r.Wait(context.Background())
	if err != nil {
		q.log.Warn("run failed", "run", j.ID, "env", j.Env, "err", err)
	}
	if ctx.Err() != nil && res != nil && res.Status == store.StatusInterrupted {
		q.interruptedByShutdown(j)
	}
	q.tell(Outcome{Job: j, Result: res, Took: q.clock.Now().Sub(start)})
}

func (q *Queue) tell(o Outcome) {
	q.mu.Lock()
	ls := q.listeners
	q.mu.Unlock()
	for _, fn := range ls {
		fn(o)
	}
}

// forgetLater drops a finished job from memory after a while, unless Run
// returns first (q.mu is held).
func (q *Queue) forgetLater(id string) {
	q.forget[id] = q.clock.AfterFunc(forgetAfter, func() {
		q.mu.Lock()
		defer q.mu.Unlock()
		delete(q.jobs, id)
		delete(q.forget, id)
	})
}

// PendingFor reports whether a run of env waits in the queue.
func (q *Queue) PendingFor(env string) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.pending[env]) > 0
}

// Depth is the number of queued jobs and runs going.
func (q *Queue) Depth() (queued, running int) {
	q.mu.Lock()
	defer q.mu.Unlock()
	for _, js := range q.pending {
		queued += len(js)
	}
	return queued, q.active
}

// Cancel stops a job: a queued one never starts, a running one is
// interrupted; a run the queue does not know (or has forgotten) is
// cancelled through the library.
func (q *Queue) Cancel(id string) error {
	q.mu.Lock()
	j, ok := q.jobs[id]
	if !ok {
		q.mu.Unlock()
		return q.k.Cancel(id)
	}
	if q.unqueue(j) {
		j.err = ErrCancelled
		close(j.started)
		q.mu.Unlock()
		if j.onStart != nil {
			j.onStart(ErrCancelled)
		}
		return nil
	}
	q.mu.Unlock()
	<-j.started
	if j.run == nil {
		return nil
	}
	j.run.Cancel()
	return nil
}

// unqueue removes j from its environment's FIFO, reporting whether it
// was there (q.mu is held).
func (q *Queue) unqueue(j *Job) bool {
	for i, p := range q.pending[j.Env] {
		if p != j {
			continue
		}
		q.pending[j.Env] = append(q.pending[j.Env][:i:i], q.pending[j.Env][i+1:]...)
		if len(q.pending[j.Env]) == 0 {
			delete(q.pending, j.Env)
			for k, env := range q.order {
				if env == j.Env {
					q.order = append(q.order[:k:k], q.order[k+1:]...)
					break
				}
			}
		}
		return true
	}
	return false
}
