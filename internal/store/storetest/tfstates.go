package storetest

import (
	"bytes"
	"errors"
	"testing"

	"knit.dev/knit/internal/store"
)

// wantLocked checks err is *store.TFLockedError naming holder.
func wantTFLocked(t *testing.T, err error, what, holder string) {
	t.Helper()
	var le *store.TFLockedError
	if !errors.As(err, &le) {
		t.Fatalf("%s: err = %v, want *store.TFLockedError", what, err)
	}
	if le.Holder.ID != holder {
		t.Errorf("%s: holder = %q, want %q", what, le.Holder.ID, holder)
	}
}

func wantState(t *testing.T, s store.Store, key string, want []byte, lockID string) {
	t.Helper()
	got, l, err := s.TFState(t.Context(), key)
	if want == nil {
		if !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("state %s: err = %v, want ErrNotFound", key, err)
		}
		return
	}
	must(t, err)
	if !bytes.Equal(got, want) || l.ID != lockID {
		t.Errorf("state %s = %q locked by %q, want %q locked by %q", key, got, l.ID, want, lockID)
	}
}

// testTFStates: Terraform state as knit's HTTP backend keeps it: binary
// bytes round-trip; while locked only the holder writes, deletes or
// unlocks, and a refusal names the holder and changes nothing; the import
// of a work dir's local state never overwrites state or a lock.
func testTFStates(t *testing.T, s store.Store) {
	ctx := t.Context()
	const key = "team/web/db"
	v1 := []byte("{\"serial\":1}\x00\xff")
	wantState(t, s, key, nil, "")
	must(t, s.PutTFState(ctx, key, v1, ""))
	wantState(t, s, key, v1, "")

	info := []byte(`{"ID":"lock-a","Operation":"OperationTypeApply"}`)
	must(t, s.LockTFState(ctx, key, store.TFLock{ID: "lock-a", Info: info}, nil))
	must(t, s.LockTFState(ctx, key, store.TFLock{ID: "lock-a", Info: info}, nil)) // the holder again
	wantTFLocked(t, s.LockTFState(ctx, key, store.TFLock{ID: "lock-b"}, nil), "second lock", "lock-a")
	wantTFLocked(t, s.PutTFState(ctx, key, []byte("b"), "lock-b"), "write by another lock", "lock-a")
	wantTFLocked(t, s.PutTFState(ctx, key, []byte("b"), ""), "write without the lock", "lock-a")
	wantTFLocked(t, s.DeleteTFState(ctx, key, "lock-b"), "delete by another lock", "lock-a")
	wantTFLocked(t, s.UnlockTFState(ctx, key, "lock-b"), "unlock with a wrong ID", "lock-a")
	wantState(t, s, key, v1, "lock-a")
	if _, l, _ := s.TFState(ctx, key); string(l.Info) != string(info) {
		t.Errorf("lock info = %s, want %s", l.Info, info)
	}

	v2 := []byte(`{"serial":2}`)
	must(t, s.PutTFState(ctx, key, v2, "lock-a"))
	if done, err := s.ImportTFState(ctx, key, []byte("old")); err != nil || done {
		t.Errorf("import over state = %v, %v; want false", done, err)
	}
	must(t, s.UnlockTFState(ctx, key, "lock-a"))
	wantState(t, s, key, v2, "")
	wantTFLocked(t, s.UnlockTFState(ctx, key, "lock-a"), "unlock of an unlocked state", "")

	// A lock on a key with no state yet, and a delete under a lock.
	must(t, s.LockTFState(ctx, "team/web/new", store.TFLock{ID: "l"}, nil))
	wantState(t, s, "team/web/new", nil, "")
	if done, err := s.ImportTFState(ctx, "team/web/new", []byte("old")); err != nil || done {
		t.Errorf("import over a lock = %v, %v; want false", done, err)
	}
	must(t, s.UnlockTFState(ctx, "team/web/new", "l"))
	if done, err := s.ImportTFState(ctx, "team/web/new", []byte("imported")); err != nil || !done {
		t.Errorf("import into nothing = %v, %v; want true", done, err)
	}
	wantState(t, s, "team/web/new", []byte("imported"), "")
	if n, err := s.CountTFStates(ctx); err != nil || n != 2 {
		t.Errorf("CountTFStates = %d, %v; want 2", n, err)
	}
	must(t, s.LockTFState(ctx, key, store.TFLock{ID: "lock-c"}, nil))
	must(t, s.DeleteTFState(ctx, key, "lock-c"))
	wantState(t, s, key, nil, "")
	wantTFLocked(t, s.LockTFState(ctx, key, store.TFLock{ID: "lock-d"}, nil), "lock after a delete under lock", "lock-c")
	must(t, s.UnlockTFState(ctx, key, "lock-c"))
	must(t, s.DeleteTFState(ctx, "team/web/new", ""))
	if n, err := s.CountTFStates(ctx); err != nil || n != 0 {
		t.Errorf("CountTFStates after deletes = %d, %v; want 0", n, err)
	}

	// A lock whose holder dead reports gone is taken over; a live one is not.
	must(t, s.PutTFState(ctx, key, v2, ""))
	must(t, s.LockTFState(ctx, key, store.TFLock{ID: "dead", Host: "h1", PID: 41}, nil))
	var asked store.TFLock
	alive := func(h store.TFLock) bool { asked = h; return false }
	wantTFLocked(t, s.LockTFState(ctx, key, store.TFLock{ID: "new", Host: "h1", PID: 42}, alive), "lock over a live holder", "dead")
	if asked.ID != "dead" || asked.Host != "h1" || asked.PID != 41 {
		t.Errorf("dead was asked about %+v, want the holder dead@h1 pid 41", asked)
	}
	must(t, s.LockTFState(ctx, key, store.TFLock{ID: "new", Host: "h1", PID: 42}, func(store.TFLock) bool { return true }))
	wantState(t, s, key, v2, "new")
	if _, l, _ := s.TFState(ctx, key); l.Host != "h1" || l.PID != 42 {
		t.Errorf("the new holder is %+v, want h1 pid 42", l)
	}
	must(t, s.UnlockTFState(ctx, key, "new"))
}

// testTFLockOfAFinishedRun: a state lock records the run it was taken for;
// while that run holds its environment's lock the state stays locked to
// any other run, on any host; once the environment's lock is taken over
// (the run's replica died, a recovery run holds it) or released, the next
// lock takes the state lock over — with no word from dead, so on another
// machine too. A run that no longer holds its environment's lock takes no
// state lock, and a lock with no run recorded keeps the dead-holder rule.
func testTFLockOfAFinishedRun(t *testing.T, s store.Store) {
	ctx := t.Context()
	const env, key = "team/web", "team/web/db"
	never := func(store.TFLock) bool { return false }
	lockFor(t, s, env, "run-a")
	must(t, s.PutTFState(ctx, key, []byte("v1"), ""))
	must(t, s.LockTFState(ctx, key, store.TFLock{ID: "tool-a", Host: "replica-1", PID: 11, Run: "run-a"}, never))
	if _, l, _ := s.TFState(ctx, key); l.Run != "run-a" || l.Host != "replica-1" {
		t.Errorf("state lock = %+v, want run-a's on replica-1", l)
	}
	// run-a holds the environment: a concurrent lock, even for a live run, is refused.
	lockFor(t, s, "team/other", "run-o")
	wantTFLocked(t, s.LockTFState(ctx, key, store.TFLock{ID: "tool-o", Host: "replica-2", PID: 22, Run: "run-o"}, never), "lock while run-a holds the environment", "tool-a")
	wantTFLocked(t, s.LockTFState(ctx, key, store.TFLock{ID: "tool-x", Host: "replica-2", PID: 22}, never), "lock without a run while run-a holds the environment", "tool-a")

	// run-b, which does not hold the environment, takes no state lock.
	if err := s.LockTFState(ctx, key, store.TFLock{ID: "tool-b", Run: "run-b"}, never); !errors.Is(err, store.ErrLockLost) {
		t.Fatalf("lock for a run without the environment's lock: err = %v, want ErrLockLost", err)
	}

	// replica-1 died: run-b (recovery) took the environment's lock over.
	lockFor(t, s, env, "run-b")
	must(t, s.LockTFState(ctx, key, store.TFLock{ID: "tool-b", Host: "replica-2", PID: 22, Run: "run-b"}, never))
	wantState(t, s, key, []byte("v1"), "tool-b")
	// The zombie's tool can no longer write nor unlock.
	wantTFLocked(t, s.PutTFState(ctx, key, []byte("zombie"), "tool-a"), "write by the taken-over lock", "tool-b")
	wantTFLocked(t, s.UnlockTFState(ctx, key, "tool-a"), "unlock by the taken-over lock", "tool-b")
	must(t, s.PutTFState(ctx, key, []byte("v2"), "tool-b"))

	// run-b ends without unlocking (its tool was killed) and releases the
	// environment: a lock without a run takes the state over.
	must(t, s.ReleaseLock(ctx, env, "run-b"))
	must(t, s.LockTFState(ctx, key, store.TFLock{ID: "tool-c"}, never))
	wantState(t, s, key, []byte("v2"), "tool-c")

	// A lock with no run recorded (an older knit's) is stale only when dead says so.
	lockFor(t, s, env, "run-d")
	wantTFLocked(t, s.LockTFState(ctx, key, store.TFLock{ID: "tool-d", Run: "run-d"}, never), "lock over a lock with no run", "tool-c")
	must(t, s.LockTFState(ctx, key, store.TFLock{ID: "tool-d", Run: "run-d"}, func(store.TFLock) bool { return true }))
	must(t, s.UnlockTFState(ctx, key, "tool-d"))
	if _, l, _ := s.TFState(ctx, key); l.ID != "" || l.Run != "" || l.Host != "" || l.PID != 0 || l.Info != nil {
		t.Errorf("after unlock the lock is %+v, want none", l)
	}
}

// testSavedPlans: an approval's saved plan bytes round-trip, and are
// dropped once the approval can never be applied (applied, or stale
// because a newer plan came).
func testSavedPlans(t *testing.T, s store.Store) {
	ctx := t.Context()
	a := approval("team/web", "db", at(1))
	must(t, s.CreateApproval(ctx, a))
	if _, err := s.SavedPlan(ctx, a.ID); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("SavedPlan before SavePlan: err = %v, want ErrNotFound", err)
	}
	plan := bytes.Repeat([]byte("PK\x03\x04\x00\xff"), 1000)
	must(t, s.SavePlan(ctx, a.ID, plan))
	got, err := s.SavedPlan(ctx, a.ID)
	must(t, err)
	if !bytes.Equal(got, plan) {
		t.Fatalf("saved plan changed: %d bytes back, %d saved", len(got), len(plan))
	}
	must(t, s.DecideApproval(ctx, a.ID, store.ApprovalPending, store.ApprovalApproved, "alice", "", at(2)))
	if _, err := s.SavedPlan(ctx, a.ID); err != nil {
		t.Fatalf("approved plan dropped: %v", err)
	}
	must(t, s.DecideApproval(ctx, a.ID, store.ApprovalApproved, store.ApprovalApplied, "alice", "", at(3)))
	if _, err := s.SavedPlan(ctx, a.ID); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("applied plan kept: err = %v, want ErrNotFound", err)
	}

	b := approval("team/web", "db", at(4))
	must(t, s.CreateApproval(ctx, b))
	must(t, s.SavePlan(ctx, b.ID, []byte("b")))
	c := approval("team/web", "db", at(5))
	must(t, s.CreateApproval(ctx, c)) // b goes stale
	if _, err := s.SavedPlan(ctx, b.ID); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("stale plan kept: err = %v, want ErrNotFound", err)
	}
}
