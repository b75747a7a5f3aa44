package storetest

import (
	"errors"
	"sync"
	"testing"
	"time"

	"knit.dev/knit/internal/store"
)

// Clocked is a store whose clock a test can set: lock leases are judged by
// the store's clock, so the suite needs to move it.
type Clocked interface {
	SetClock(now func() time.Time)
}

// clock is a settable time for a store under test.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }

func (c *clock) set(t time.Time) { c.mu.Lock(); c.now = t; c.mu.Unlock() }

// clockOf gives s a clock at t0 that the test moves with set.
func clockOf(t *testing.T, s store.Store) *clock {
	t.Helper()
	cs, ok := s.(Clocked)
	if !ok {
		t.Fatalf("%T does not let tests set its clock (storetest.Clocked)", s)
	}
	c := &clock{now: at(0)}
	cs.SetClock(c.Now)
	return c
}

// lockFor makes runID the holder of env's lock (taking it over), as a run
// must be for its component runs to be written.
func lockFor(t *testing.T, s store.Store, env, runID string) {
	t.Helper()
	_, err := s.AcquireLock(t.Context(), holder(env, runID), time.Hour, func(store.Lock) bool { return true })
	must(t, err)
}

func holder(env, runID string) store.Lock {
	return store.Lock{Env: env, RunID: runID, Owner: "alice", PID: 7, Host: "laptop"}
}

func wantLocked(t *testing.T, err error, holder string) {
	t.Helper()
	var le *store.LockedError
	if !errors.As(err, &le) {
		t.Fatalf("err = %v, want *store.LockedError", err)
	}
	if le.Holder.RunID != holder {
		t.Errorf("LockedError names holder %q, want %q", le.Holder.RunID, holder)
	}
}

func acquire(t *testing.T, s store.Store, l store.Lock, lease time.Duration, dead func(store.Lock) bool) error {
	t.Helper()
	_, err := s.AcquireLock(t.Context(), l, lease, dead)
	return err
}

func testLocks(t *testing.T, s store.Store) {
	ctx := t.Context()
	c := clockOf(t, s)
	got, err := s.AcquireLock(ctx, holder("team/web", "run-a"), time.Minute, nil)
	must(t, err)
	if !got.Acquired.Equal(at(0)) || !got.Expires.Equal(at(time.Minute)) {
		t.Errorf("lease %v–%v, want the store's clock: %v–%v", got.Acquired, got.Expires, at(0), at(time.Minute))
	}
	if l, err := s.Lock(ctx, "team/web"); err != nil || l.RunID != "run-a" || l.Host != "laptop" {
		t.Errorf("Lock: %+v, %v", l, err)
	}
	_, err = s.Lock(ctx, "team/none")
	wantNotFound(t, err, "Lock of an unlocked environment")

	// The same run renews by acquiring again.
	c.set(at(30 * time.Second))
	must(t, acquire(t, s, holder("team/web", "run-a"), 5*time.Minute, nil))

	// Another run is refused, with the holder named, while the lease lives.
	c.set(at(2 * time.Minute))
	err = acquire(t, s, holder("team/web", "run-b"), time.Minute, func(store.Lock) bool { return false })
	wantLocked(t, err, "run-a")
	var le *store.LockedError
	if errors.As(err, &le) && (le.Env != "team/web" || le.Holder.PID != 7 || !le.Holder.Expires.Equal(at(5*time.Minute+30*time.Second))) {
		t.Errorf("LockedError: %+v", le)
	}
	// Locks are per environment.
	must(t, acquire(t, s, holder("team/api", "run-b"), time.Minute, nil))

	// Release by a run that does not hold the lock does nothing.
	must(t, s.ReleaseLock(ctx, "team/web", "run-b"))
	wantLocked(t, acquire(t, s, holder("team/web", "run-c"), time.Minute, nil), "run-a")

	// RenewLock extends only the holder's lease.
	if err := s.RenewLock(ctx, "team/web", "run-c", time.Hour); !errors.Is(err, store.ErrLockLost) {
		t.Errorf("RenewLock by a run not holding the lock: %v, want ErrLockLost", err)
	}
	must(t, s.RenewLock(ctx, "team/web", "run-a", time.Hour))
	c.set(at(30 * time.Minute))
	wantLocked(t, acquire(t, s, holder("team/web", "run-c"), time.Minute, nil), "run-a")

	// Release, then another run acquires.
	must(t, s.ReleaseLock(ctx, "team/web", "run-a"))
	must(t, acquire(t, s, holder("team/web", "run-c"), time.Minute, nil))
	if err := s.RenewLock(ctx, "team/web", "run-a", time.Hour); !errors.Is(err, store.ErrLockLost) {
		t.Errorf("RenewLock by a run whose lock was released: %v, want ErrLockLost", err)
	}
}

func testLockTakeover(t *testing.T, s store.Store) {
	c := clockOf(t, s)
	must(t, acquire(t, s, holder("team/web", "run-a"), time.Minute, nil))

	// At the expiry instant, as the store's clock says, the lease is over.
	c.set(at(time.Minute))
	must(t, acquire(t, s, holder("team/web", "run-b"), time.Minute, nil))
	wantLocked(t, acquire(t, s, holder("team/web", "run-a"), time.Minute, nil), "run-b")
	must(t, s.ReleaseLock(t.Context(), "team/web", "run-a")) // the old holder's release must not free run-b's lock
	wantLocked(t, acquire(t, s, holder("team/web", "run-c"), time.Minute, nil), "run-b")

	// A live lease whose holder is dead is taken over; dead sees the holder.
	var asked store.Lock
	dead := func(h store.Lock) bool { asked = h; return true }
	must(t, acquire(t, s, holder("team/web", "run-c"), time.Minute, dead))
	if asked.RunID != "run-b" || asked.PID != 7 {
		t.Errorf("dead was asked about %+v, want run-b's lease", asked)
	}
	if err := s.RenewLock(t.Context(), "team/web", "run-b", time.Hour); !errors.Is(err, store.ErrLockLost) {
		t.Errorf("RenewLock by a run whose lock was taken over: %v, want ErrLockLost", err)
	}
	wantLocked(t, acquire(t, s, holder("team/web", "run-d"), time.Minute, nil), "run-c")
}

// testFencing: once a run's lease expired and another run took the lock,
// the old run's writes are refused and the new holder's records stand.
func testFencing(t *testing.T, s store.Store) {
	ctx := t.Context()
	c := clockOf(t, s)
	must(t, acquire(t, s, holder("team/web", "run-a"), time.Minute, nil))
	must(t, s.CreateRun(ctx, store.Run{ID: "run-a", Env: "team/web", Kind: "apply", Status: store.StatusRunning, PID: 1, StartedAt: at(0)}))
	crA := &store.ComponentRun{RunID: "run-a", Env: "team/web", Component: "db", Operation: "apply", StartedAt: at(0)}
	must(t, s.StartComponentRun(ctx, crA))

	c.set(at(2 * time.Minute))
	must(t, acquire(t, s, holder("team/web", "run-b"), time.Minute, nil))
	must(t, s.CreateRun(ctx, store.Run{ID: "run-b", Env: "team/web", Kind: "apply", Status: store.StatusRunning, PID: 2, StartedAt: at(2 * time.Minute)}))
	_, err := s.InterruptRuns(ctx, "team/web", func(pid int) bool { return pid == 2 }, at(2*time.Minute))
	must(t, err)
	crB := &store.ComponentRun{RunID: "run-b", Env: "team/web", Component: "db", Operation: "apply", StartedAt: at(2 * time.Minute)}
	must(t, s.StartComponentRun(ctx, crB))
	crB.Status, crB.FinishedAt = "applied", at(3*time.Minute)
	must(t, s.FinishComponentRun(ctx, *crB, &store.ComponentState{Status: "applied", Fingerprint: "b", Revision: 2}))

	// run-a comes back: every write is refused.
	if err := s.StartComponentRun(ctx, &store.ComponentRun{RunID: "run-a", Env: "team/web", Component: "web", StartedAt: at(4 * time.Minute)}); !errors.Is(err, store.ErrLockLost) {
		t.Errorf("StartComponentRun of the old holder: %v, want ErrLockLost", err)
	}
	crA.Status, crA.FinishedAt = "applied", at(4*time.Minute)
	if err := s.FinishComponentRun(ctx, *crA, &store.ComponentState{Status: "applied", Fingerprint: "a", Revision: 1}); !errors.Is(err, store.ErrLockLost) {
		t.Errorf("FinishComponentRun of the old holder: %v, want ErrLockLost", err)
	}
	if err := s.FinishRun(ctx, "run-a", store.StatusSucceeded, "", at(4*time.Minute)); !errors.Is(err, store.ErrLockLost) {
		t.Errorf("FinishRun of the old holder: %v, want ErrLockLost", err)
	}
	states, err := s.ComponentStates(ctx, "team/web")
	must(t, err)
	if states["db"].Fingerprint != "b" {
		t.Errorf("db's state %+v: the old holder overwrote the new one's", states["db"])
	}
	if r, _ := s.Run(ctx, "run-a"); r.Status != store.StatusInterrupted {
		t.Errorf("old run recorded %q, want interrupted", r.Status)
	}
	// The holder finishes normally, also after releasing its lock.
	must(t, s.ReleaseLock(ctx, "team/web", "run-b"))
	must(t, s.FinishRun(ctx, "run-b", store.StatusSucceeded, "", at(5*time.Minute)))
}
