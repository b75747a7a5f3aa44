package storetest

import (
	"errors"
	"testing"
	"time"

	"knit.dev/knit/internal/store"
)

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

func testLocks(t *testing.T, s store.Store, c *clock) {
	ctx := t.Context()
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

func testLockTakeover(t *testing.T, s store.Store, c *clock) {
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

// testLockLease: the store's clock, not the caller's, sets a lease's times;
// a holder may renew a lease that expired while no one took it over; what
// AcquireLock returns is what Lock reads.
func testLockLease(t *testing.T, s store.Store, c *clock) {
	ctx := t.Context()
	l := holder("team/web", "run-a")
	l.Acquired, l.Expires = at(-time.Hour), at(24*time.Hour) // a caller whose clock is far off
	got, err := s.AcquireLock(ctx, l, time.Minute, nil)
	must(t, err)
	want := holder("team/web", "run-a")
	want.Acquired, want.Expires = at(0), at(time.Minute)
	equal(t, "lock as acquired", got, want)
	wantStoredLock(t, s, want)

	// Acquiring again extends the lease and keeps what was stored.
	c.set(at(30 * time.Second))
	again := holder("team/web", "run-a")
	again.PID = 99
	got, err = s.AcquireLock(ctx, again, 2*time.Minute, nil)
	must(t, err)
	want.Expires = at(2*time.Minute + 30*time.Second)
	equal(t, "lock re-acquired by its holder", got, want)
	wantStoredLock(t, s, want)

	// RenewLock runs the lease from the store's now.
	c.set(at(time.Minute))
	must(t, s.RenewLock(ctx, "team/web", "run-a", 5*time.Minute))
	want.Expires = at(6 * time.Minute)
	wantStoredLock(t, s, want)

	// Expired, but no one took it over: the holder may still renew.
	c.set(at(10 * time.Minute))
	must(t, s.RenewLock(ctx, "team/web", "run-a", time.Minute))
	want.Expires = at(11 * time.Minute)
	wantStoredLock(t, s, want)
	c.set(at(10*time.Minute + 30*time.Second))
	wantLocked(t, acquire(t, s, holder("team/web", "run-b"), time.Minute, nil), "run-a")

	// The caller's far-off Expires bought nothing: the store's lease ends.
	c.set(at(11 * time.Minute))
	must(t, acquire(t, s, holder("team/web", "run-b"), time.Minute, nil))

	// A lease must be positive.
	if _, err := s.AcquireLock(ctx, holder("team/api", "run-x"), 0, nil); err == nil {
		t.Error("AcquireLock with a zero lease succeeded")
	}
	_, err = s.Lock(ctx, "team/api")
	wantNotFound(t, err, "lock after a refused zero lease")
	if err := s.RenewLock(ctx, "team/web", "run-b", -time.Second); err == nil {
		t.Error("RenewLock with a negative lease succeeded")
	}
}

func wantStoredLock(t *testing.T, s store.Store, want store.Lock) {
	t.Helper()
	got, err := s.Lock(t.Context(), want.Env)
	must(t, err)
	equal(t, "lock as stored", got, want)
}

// testStoreClock: records given no time are stamped by the store's clock.
func testStoreClock(t *testing.T, s store.Store, c *clock) {
	ctx := t.Context()
	c.set(at(time.Hour))
	r, err := s.PutRevision(ctx, env("team/web"), store.Revision{Spec: []byte(`{}`)})
	must(t, err)
	equal(t, "revision created", r.CreatedAt, at(time.Hour))
	must(t, s.CreateRun(ctx, store.Run{ID: "r1", Env: "team/web", Status: store.StatusRunning}))
	run, err := s.Run(ctx, "r1")
	must(t, err)
	equal(t, "run started", run.StartedAt, at(time.Hour))
	must(t, s.AppendAudit(ctx, store.AuditEvent{Env: "team/web", Action: "apply"}))
	events, err := s.Audit(ctx, store.AuditFilter{})
	must(t, err)
	if len(events) != 1 || !events[0].Time.Equal(at(time.Hour)) {
		t.Errorf("audit events %+v, want one at %v", events, at(time.Hour))
	}

	c.set(at(2 * time.Hour))
	must(t, s.SetEnvironmentStatus(ctx, "team/web", "provisioned"))
	e, err := s.Environment(ctx, "team/web")
	must(t, err)
	equal(t, "environment updated by status", e.UpdatedAt, at(2*time.Hour))
	c.set(at(3 * time.Hour))
	must(t, s.SetAppliedRevision(ctx, "team/web", 1))
	e, err = s.Environment(ctx, "team/web")
	must(t, err)
	equal(t, "environment updated by applied revision", e.UpdatedAt, at(3*time.Hour))
}
