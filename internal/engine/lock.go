package engine

import (
	"context"
	"errors"
	"fmt"
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

// lock takes the environment's lease and keeps renewing it until the
// returned release is called. A holder on this host whose process is gone
// (knit was killed) is taken over at once; otherwise the lease must expire,
// as the store's clock judges. If the lease cannot be renewed, lost is
// called once with why, and renewal stops.
func (e *Engine) lock(ctx context.Context, env, runID, actor string, lost func(error)) (release func() error, err error) {
	lease := e.LockLease
	if lease <= 0 {
		lease = defaultLease
	}
	l := store.Lock{Env: env, RunID: runID, Owner: actor, PID: e.PID, Host: e.Host}
	if _, err := e.Store.AcquireLock(ctx, l, lease, e.deadHolder); err != nil {
		var le *store.LockedError
		if errors.As(err, &le) {
			return nil, fmt.Errorf("%w: %w; wait for it to finish (if its process died, its lease expires at the time shown)", ErrLocked, err)
		}
		return nil, fmt.Errorf("take the lock of %s: %w", env, err)
	}
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		e.renew(ctx, env, runID, lease, stop, lost)
	}()
	return func() error {
		close(stop)
		<-done
		if err := e.Store.ReleaseLock(context.WithoutCancel(ctx), env, runID); err != nil && !errors.Is(err, store.ErrLockLost) {
			return fmt.Errorf("release the lock of %s: %w", env, err)
		}
		return nil
	}, nil
}

// renew extends the lease every third of it. A renewal that fails is
// retried on the next tick; once the lease is lost, or a third of it is
// all that may be left since the last renewal, the run is told to stop.
func (e *Engine) renew(ctx context.Context, env, runID string, lease time.Duration, stop <-chan struct{}, lost func(error)) {
	t := time.NewTicker(lease / 3)
	defer t.Stop()
	last := time.Now()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
		}
		err := e.Store.RenewLock(context.WithoutCancel(ctx), env, runID, lease)
		switch {
		case err == nil:
			last = time.Now()
		case errors.Is(err, store.ErrLockLost):
			lost(fmt.Errorf("%w: run %s of %s: %v", ErrLockLost, runID, env, err))
			return
		case time.Since(last) > lease*2/3:
			lost(fmt.Errorf("%w: run %s could not renew the lock of %s: %v", ErrLockLost, runID, env, err))
			return
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
