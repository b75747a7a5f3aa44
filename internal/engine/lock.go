package engine

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"knit.dev/knit/internal/procexec"
	"knit.dev/knit/internal/store"
)

// ErrLocked wraps store.LockedError: another run holds the environment.
var ErrLocked = errors.New("another run holds the environment")

// ErrLockLost means a run no longer holds its environment's lock (its lease
// ran out and another run took it): the run stops, and the store refuses
// its writes.
var ErrLockLost = store.ErrLockLost

const defaultLease = 60 * time.Second

// leaseMargin is the part of a lease its holder never counts on: the run
// stops, and its tools are stopped, once the last renewal is older than
// the lease minus this.
func leaseMargin(lease time.Duration) time.Duration { return lease / 10 }

// grace is how long a stopped tool has between SIGINT and SIGKILL.
func (e *Engine) grace() time.Duration {
	if e.ToolGrace > 0 {
		return e.ToolGrace
	}
	return procexec.Grace
}

// lock takes the environment's lease and keeps renewing it until the
// returned hold is stopped or released. A holder on this host whose
// process is gone (knit was killed) is taken over at once; otherwise the
// lease must expire, as the store's clock judges. The lease in the store
// lasts LockLease plus the tool grace: another host takes the environment
// over only once this run's tools, stopped at the latest LockLease after
// the last renewal, have had their grace. If the lease cannot be renewed,
// lost is called once with why, and renewal stops; the watchdog, which
// does not depend on this process running, stops the run's tools at the
// same deadline.
func (e *Engine) lock(ctx context.Context, env, runID, actor string, lost func(error)) (*envLock, error) {
	lease := e.LockLease
	if lease <= 0 {
		lease = defaultLease
	}
	l := store.Lock{Env: env, RunID: runID, Owner: actor, PID: e.PID, Host: e.Host}
	start := procexec.Monotonic()
	if _, err := e.Store.AcquireLock(ctx, l, lease+e.grace(), e.deadHolder); err != nil {
		var le *store.LockedError
		if errors.As(err, &le) {
			return nil, fmt.Errorf("%w: %w; wait for it to finish (if its process died, its lease expires at the time shown)", ErrLocked, err)
		}
		return nil, fmt.Errorf("take the lock of %s: %w", env, err)
	}
	if err := e.Watchdog.Lease(runID, start+lease-leaseMargin(lease), e.grace()); err != nil {
		if rerr := e.Store.ReleaseLock(context.WithoutCancel(ctx), env, runID); rerr != nil {
			return nil, fmt.Errorf("%w; and release the lock of %s: %w (its lease ends it)", err, env, rerr)
		}
		return nil, err
	}
	h := &envLock{e: e, db: context.WithoutCancel(ctx), env: env, runID: runID, stopCh: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(h.done)
		e.renew(ctx, env, runID, lease, start, h.stopCh, lost)
	}()
	return h, nil
}

// envLock is a run's hold of its environment's lock.
type envLock struct {
	e          *Engine
	db         context.Context
	env, runID string
	once       sync.Once
	stopCh     chan struct{}
	done       chan struct{}
}

// stop ends the renewals, once: the lock is then held until its lease
// ends or it is released.
func (h *envLock) stop() {
	h.once.Do(func() {
		close(h.stopCh)
		<-h.done
	})
}

// release stops the renewals, frees the lock unless the run's outcome
// freed it already (released: RunOutcome.ReleaseLock), and ends the
// watchdog's lease.
func (h *envLock) release(released bool) error {
	h.stop()
	var err error
	if !released {
		err = h.e.Store.ReleaseLock(h.db, h.env, h.runID)
	}
	werr := h.e.Watchdog.Release(h.runID)
	if err != nil && !errors.Is(err, store.ErrLockLost) {
		return fmt.Errorf("release the lock of %s: %w", h.env, err)
	}
	return werr
}

// renew extends the lease every third of it, and sooner after a renewal
// failed. last is when the last successful renewal began, on the
// monotonic clock (which runs on while this process is stopped): once the
// lease is lost, or older than the lease minus its margin, the run is
// told to stop. Every renewal gives the watchdog the new deadline.
func (e *Engine) renew(ctx context.Context, env, runID string, lease, last time.Duration, stop <-chan struct{}, lost func(error)) {
	wait := lease / 3
	for {
		t := time.NewTimer(min(wait, max(last+lease-leaseMargin(lease)-procexec.Monotonic(), 0)))
		select {
		case <-stop:
			t.Stop()
			return
		case <-t.C:
		}
		if age := procexec.Monotonic() - last; age > lease-leaseMargin(lease) {
			lost(fmt.Errorf("%w: run %s last renewed the lock of %s %v ago, longer than its lease allows", ErrLockLost, runID, env, age.Round(time.Millisecond)))
			return
		}
		start := procexec.Monotonic()
		err := e.Store.RenewLock(context.WithoutCancel(ctx), env, runID, lease+e.grace())
		if err == nil {
			err = e.Watchdog.Lease(runID, start+lease-leaseMargin(lease), e.grace())
		}
		switch {
		case err == nil:
			last, wait = start, lease/3
		case errors.Is(err, store.ErrLockLost):
			lost(fmt.Errorf("%w: run %s of %s: %v", ErrLockLost, runID, env, err))
			return
		default:
			wait = max(lease/10, 10*time.Millisecond) // try again soon: the store may be back
		}
	}
}

// deadHolder reports whether a lock's holder is a process on this host that
// no longer exists. An engine that does not know its own host and PID
// cannot tell, so it never takes over a live lease.
func (e *Engine) deadHolder(h store.Lock) bool {
	if e.Host == "" || e.PID <= 0 || h.Host != e.Host || h.PID <= 0 || h.PID == e.PID {
		return false
	}
	return !procexec.Alive(h.PID)
}
