package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"knit.dev/knit/internal/engine"
	"knit.dev/knit/internal/knit"
	"knit.dev/knit/internal/store"
)

// job is one queued run: its ID is handed out at once, before it starts.
type job struct {
	id      string
	env     string
	req     knit.RunRequest
	queued  time.Time
	started chan struct{} // closed once run or err is set
	run     *engine.Run
	err     error // the run could not start (locked, never applied, …)
	// onStart, when set, learns whether the run started (nil) or why not,
	// including errCancelled for a job cancelled while queued. A job still
	// queued when the server stops never calls it.
	onStart func(err error)
}

// errCancelled: a queued job was cancelled before it started.
var errCancelled = errors.New("cancelled before it started")

// queue runs at most max runs at once, fairly across environments: each
// environment has its own FIFO, served round-robin, and one environment
// never has two runs going (its lock would refuse the second anyway).
type queue struct {
	ctx context.Context
	k   *knit.Knit
	log *slog.Logger
	met *metrics
	max int

	mu      sync.Mutex
	pending map[string][]*job // env → jobs waiting
	order   []string          // envs with pending jobs, in turn order
	busy    map[string]bool   // env → a run is going
	jobs    map[string]*job   // every job not yet forgotten, by ID
	active  int
	done    sync.WaitGroup
	// onFinish, when set, learns each run's outcome (notifications).
	onFinish func(j *job, res *engine.Result)
	// onShutdown, when set, learns of each run the server's shutdown
	// interrupted, so that it is resumed after a restart.
	onShutdown func(j *job)
}

func newQueue(ctx context.Context, k *knit.Knit, max int, log *slog.Logger, met *metrics) *queue {
	return &queue{ctx: ctx, k: k, log: log, met: met, max: max,
		pending: map[string][]*job{}, busy: map[string]bool{}, jobs: map[string]*job{}}
}

// enqueue adds a run of env and returns its ID.
func (q *queue) enqueue(req knit.RunRequest, env string) (string, error) {
	return q.enqueueWith(req, env, nil)
}

// enqueueWith is enqueue with a callback told whether the run started.
func (q *queue) enqueueWith(req knit.RunRequest, env string, onStart func(error)) (string, error) {
	if q.ctx.Err() != nil {
		return "", fmt.Errorf("the server is shutting down")
	}
	j := &job{id: knit.NewRunID(), env: env, req: req, queued: time.Now(), started: make(chan struct{}), onStart: onStart}
	j.req.RunID = j.id
	q.mu.Lock()
	q.jobs[j.id] = j
	if len(q.pending[env]) == 0 {
		q.order = append(q.order, env)
	}
	q.pending[env] = append(q.pending[env], j)
	q.met.queueDepth.Inc()
	q.mu.Unlock()
	q.dispatch()
	return j.id, nil
}

// job returns a queued, running or recently finished job by ID.
func (q *queue) job(id string) (*job, bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	j, ok := q.jobs[id]
	return j, ok
}

// dispatch starts what may start now.
func (q *queue) dispatch() {
	q.mu.Lock()
	defer q.mu.Unlock()
	for q.active < q.max && q.ctx.Err() == nil {
		j := q.next()
		if j == nil {
			return
		}
		q.active++
		q.busy[j.env] = true
		q.met.queueDepth.Dec()
		q.done.Add(1)
		go q.execute(j)
	}
}

// next pops the first job of the first environment in turn that is not
// busy, and moves that environment to the back of the turn order.
func (q *queue) next() *job {
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

func (q *queue) execute(j *job) {
	defer q.done.Done()
	defer func() {
		q.mu.Lock()
		q.active--
		q.busy[j.env] = false
		q.mu.Unlock()
		q.forgetLater(j.id)
		q.dispatch()
	}()
	start := time.Now()
	r, err := q.k.Start(q.ctx, j.req)
	j.run, j.err = r, err
	close(j.started)
	if j.onStart != nil {
		j.onStart(err)
	}
	if err != nil {
		q.log.Warn("run could not start", "run", j.id, "env", j.env, "kind", j.req.Kind, "err", err)
		q.met.runFinished(j.req.Kind, string(store.StatusRefused), 0)
		return
	}
	res, err := r.Wait(context.Background())
	result := "error"
	if res != nil {
		result = string(res.Status)
	}
	q.met.runFinished(j.req.Kind, result, time.Since(start))
	if err != nil {
		q.log.Warn("run failed", "run", j.id, "env", j.env, "err", err)
	}
	if q.ctx.Err() != nil && res != nil && res.Status == store.StatusInterrupted && q.onShutdown != nil &&
		(j.req.Kind == engine.KindApply || j.req.Kind == engine.KindTeardown) {
		q.onShutdown(j)
	}
	if q.onFinish != nil {
		q.onFinish(j, res)
	}
}

// forgetLater drops a finished job from memory after a while: the store
// has its record, the engine its events for a while longer.
func (q *queue) forgetLater(id string) {
	time.AfterFunc(10*time.Minute, func() {
		q.mu.Lock()
		delete(q.jobs, id)
		q.mu.Unlock()
	})
}

// wait waits for running jobs (cancelled by the server's context) to finish.
func (q *queue) wait(ctx context.Context) {
	done := make(chan struct{})
	go func() { q.done.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
	}
}

// pendingFor reports whether a run of env waits in the queue.
func (q *queue) pendingFor(env string) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.pending[env]) > 0
}

// depth is the number of queued jobs and runs going.
func (q *queue) depth() (queued, running int) {
	q.mu.Lock()
	defer q.mu.Unlock()
	for _, js := range q.pending {
		queued += len(js)
	}
	return queued, q.active
}

// cancel stops a job: a queued one never starts, a running one is interrupted.
func (q *queue) cancel(id string) error {
	q.mu.Lock()
	j, ok := q.jobs[id]
	if !ok {
		q.mu.Unlock()
		return q.k.Cancel(id) // a run this queue does not know (or has forgotten)
	}
	for i, p := range q.pending[j.env] {
		if p == j {
			q.pending[j.env] = append(q.pending[j.env][:i:i], q.pending[j.env][i+1:]...)
			if len(q.pending[j.env]) == 0 {
				delete(q.pending, j.env)
				for k, env := range q.order {
					if env == j.env {
						q.order = append(q.order[:k:k], q.order[k+1:]...)
						break
					}
				}
			}
			q.met.queueDepth.Dec()
			j.err = errCancelled
			close(j.started)
			q.mu.Unlock()
			if j.onStart != nil {
				j.onStart(errCancelled)
			}
			return nil
		}
	}
	q.mu.Unlock()
	<-j.started
	if j.run == nil {
		return nil
	}
	j.run.Cancel()
	return nil
}
