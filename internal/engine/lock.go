package engine

import (
	"context"
	"errors"
	"fmt"
	"syscall"
	"time"

	"knit.dev/knit/internal/store"
)

// ErrLocked wraps store.LockedError: another run holds the environment.
var ErrLocked = errors.New("another run holds the environment")

const defaultLease = 60 * time.Second

// lock takes the environment's lease and keeps renewing it until the
// returned release is called. A holder on this host whose process is gone
// (knit was killed) is taken over at once; elsewhere the lease must expire.
func (e *Engine) lock(ctx context.Context, env, runID string) (release func(), err error) {
	lease := e.LockLease
	if lease <= 0 {
		lease = defaultLease
	}
	now := e.now()
	l := store.Lock{Env: env, RunID: runID, Owner: e.Actor, PID: e.PID, Host: e.Host, Acquired: now, Expires: now.Add(lease)}
	dead := func(h store.Lock) bool { return h.Host == e.Host && !processAlive(h.PID) }
	if err := e.Store.AcquireLock(ctx, l, now, dead); err != nil {
		var le *store.LockedError
		if errors.As(err, &le) {
			return nil, fmt.Errorf("%w: %w; wait for it to finish (if its process died, its lease expires at the time shown)", ErrLocked, err)
		}
		return nil, err
	}
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(lease / 3)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-t.C:
				// A failed renewal is retried on the next tick; the lease covers two misses.
				_ = e.Store.RenewLock(context.WithoutCancel(ctx), env, runID, e.now().Add(lease))
			}
		}
	}()
	return func() {
		close(stop)
		<-done
		_ = e.Store.ReleaseLock(context.WithoutCancel(ctx), env, runID)
	}, nil
}

// processAlive reports whether a process with pid exists on this host.
func processAlive(pid int) bool {
	if pid <= 0 {
		return false
	}
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}
