package storetest

import (
	"errors"
	"testing"
	"time"

	"knit.dev/knit/internal/store"
)

func lease(env, runID string, acquired time.Time) store.Lock {
	return store.Lock{Env: env, RunID: runID, Owner: "alice", PID: 7, Host: "laptop", Acquired: acquired, Expires: acquired.Add(time.Minute)}
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

func testLocks(t *testing.T, s store.Store) {
	ctx := t.Context()
	a := lease("team/web", "run-a", at(0))
	must(t, s.AcquireLock(ctx, a, at(0), nil))

	// The same run renews by acquiring again.
	a2 := a
	a2.Expires = at(5 * time.Minute)
	must(t, s.AcquireLock(ctx, a2, at(30*time.Second), nil))

	// Another run is refused, with the holder named, while the lease lives.
	err := s.AcquireLock(ctx, lease("team/web", "run-b", at(2*time.Minute)), at(2*time.Minute), func(store.Lock) bool { return false })
	wantLocked(t, err, "run-a")
	var le *store.LockedError
	if errors.As(err, &le) && (le.Env != "team/web" || le.Holder.Host != "laptop" || le.Holder.PID != 7 || !le.Holder.Expires.Equal(at(5*time.Minute))) {
		t.Errorf("LockedError: %+v", le)
	}
	// Locks are per environment.
	must(t, s.AcquireLock(ctx, lease("team/api", "run-b", at(0)), at(0), nil))

	// Release by a run that does not hold the lock does nothing.
	must(t, s.ReleaseLock(ctx, "team/web", "run-b"))
	wantLocked(t, s.AcquireLock(ctx, lease("team/web", "run-c", at(time.Minute)), at(time.Minute), nil), "run-a")

	// RenewLock extends only the holder's lease.
	if err := s.RenewLock(ctx, "team/web", "run-c", at(time.Hour)); err == nil {
		t.Error("RenewLock by a run not holding the lock succeeded")
	}
	must(t, s.RenewLock(ctx, "team/web", "run-a", at(time.Hour)))
	wantLocked(t, s.AcquireLock(ctx, lease("team/web", "run-c", at(30*time.Minute)), at(30*time.Minute), nil), "run-a")

	// Release, then another run acquires.
	must(t, s.ReleaseLock(ctx, "team/web", "run-a"))
	must(t, s.AcquireLock(ctx, lease("team/web", "run-c", at(31*time.Minute)), at(31*time.Minute), nil))
	if err := s.RenewLock(ctx, "team/web", "run-a", at(2*time.Hour)); err == nil {
		t.Error("RenewLock by a run whose lock was released succeeded")
	}
}

func testLockTakeover(t *testing.T, s store.Store) {
	ctx := t.Context()
	must(t, s.AcquireLock(ctx, lease("team/web", "run-a", at(0)), at(0), nil))

	// At the expiry instant the lease is over.
	must(t, s.AcquireLock(ctx, lease("team/web", "run-b", at(time.Minute)), at(time.Minute), nil))
	wantLocked(t, s.AcquireLock(ctx, lease("team/web", "run-a", at(61*time.Second)), at(61*time.Second), nil), "run-b")
	must(t, s.ReleaseLock(ctx, "team/web", "run-a")) // the old holder's release must not free run-b's lock
	wantLocked(t, s.AcquireLock(ctx, lease("team/web", "run-c", at(62*time.Second)), at(62*time.Second), nil), "run-b")

	// A live lease whose holder is dead is taken over; dead sees the holder.
	var asked store.Lock
	dead := func(h store.Lock) bool { asked = h; return true }
	must(t, s.AcquireLock(ctx, lease("team/web", "run-c", at(63*time.Second)), at(63*time.Second), dead))
	if asked.RunID != "run-b" || asked.PID != 7 {
		t.Errorf("dead was asked about %+v, want run-b's lease", asked)
	}
	if err := s.RenewLock(ctx, "team/web", "run-b", at(time.Hour)); err == nil {
		t.Error("RenewLock by a run whose lock was taken over succeeded")
	}
	wantLocked(t, s.AcquireLock(ctx, lease("team/web", "run-d", at(64*time.Second)), at(64*time.Second), nil), "run-c")
}
