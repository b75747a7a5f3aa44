// Package rollout carries rollouts by an environment's strategy (canary)
// on in knit serve: after each of their runs it queues the next one
// (knit.Rollouts.Next decides it, as the CLI's foreground does), waits
// out a pause with a duration, and at start carries on the rollouts a
// crash or a stop left between steps, at the step and weight the store
// recorded.
package rollout

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"knit.dev/knit/internal/controller/clock"
	"knit.dev/knit/internal/engine"
	"knit.dev/knit/internal/knit"
)

// Queue is where the driver submits a rollout's runs: the server's run queue.
type Queue interface {
	Enqueue(req knit.RunRequest, env string) (runID string, err error)
}

// Driver follows the runs of rollouts. Its methods are safe to call from
// several goroutines.
type Driver struct {
	k     *knit.Knit
	q     Queue
	clock clock.Clock
	log   *slog.Logger

	mu     sync.Mutex
	timers map[string]clock.Timer // pauses with a duration, by environment
	ctx    context.Context
}

// New is the driver of k's rollouts, submitting their runs to q.
func New(k *knit.Knit, q Queue, c clock.Clock, log *slog.Logger) *Driver {
	return &Driver{k: k, q: q, clock: clock.Or(c), log: log, timers: map[string]clock.Timer{}, ctx: context.Background()}
}

// RunEnded follows the end of run req with result res: the next run of
// the rollout it is a step of, if any.
func (d *Driver) RunEnded(req knit.RunRequest, res *engine.Result) {
	if res == nil {
		return
	}
	a, err := knit.NewRollouts(d.k).Next(d.context(), req, res)
	d.act(res.Env, a, err)
}

// Resume carries on every rollout between steps (call it once the run
// queue resumed the runs a crash interrupted: a step's interrupted run is
// resumed there, and carries the step on).
func (d *Driver) Resume(ctx context.Context) error {
	acts, err := knit.NewRollouts(d.k).Resume(ctx)
	if err != nil {
		return err
	}
	for env, a := range acts {
		d.act(env, a, nil)
	}
	return nil
}

// Run keeps the pauses' timers until ctx ends, then stops them.
func (d *Driver) Run(ctx context.Context) error {
	d.mu.Lock()
	d.ctx = ctx
	d.mu.Unlock()
	<-ctx.Done()
	d.mu.Lock()
	defer d.mu.Unlock()
	for env, t := range d.timers {
		t.Stop()
		delete(d.timers, env)
	}
	return nil
}

func (d *Driver) context() context.Context {
	d.mu.Lock()
	defer d.mu.Unlock()
	return context.WithoutCancel(d.ctx)
}

// Act carries out for env what a person's promote, abort or retry led
// to (a): it queues its run, returning the run's ID, or waits out its
// pause.
func (d *Driver) Act(env string, a knit.RolloutAction) (runID string, err error) {
	if a.Run != nil {
		return d.q.Enqueue(*a.Run, env)
	}
	d.act(env, a, nil)
	return "", nil
}

// act carries a out for env: queue its run, or wait out its pause.
func (d *Driver) act(env string, a knit.RolloutAction, err error) {
	switch {
	case err != nil:
		d.log.Error("carry a rollout on", "env", env, "err", err)
	case a.Run != nil:
		if _, err := d.q.Enqueue(*a.Run, env); err != nil {
			d.log.Error("queue a rollout's run", "env", env, "err", err)
		}
	case !a.Until.IsZero():
		d.mu.Lock()
		defer d.mu.Unlock()
		if t, ok := d.timers[env]; ok {
			t.Stop()
		}
		d.timers[env] = d.clock.AfterFunc(max(a.Until.Sub(d.clock.Now()), time.Millisecond), func() {
			d.mu.Lock()
			delete(d.timers, env)
			d.mu.Unlock()
			next, err := knit.NewRollouts(d.k).Continue(d.context(), env)
			d.act(env, next, err)
		})
	}
}
