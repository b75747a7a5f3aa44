package storetest

import (
	"bytes"
	"context"
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

// put writes data as key's state for run under lockID, with data's
// serial and lineage as w says.
func put(s store.Store, key, run, lockID string, data []byte, serial int64, lineage string) error {
	return s.PutTFState(context.Background(), key, data, store.TFWrite{Run: run, LockID: lockID, Serial: serial, Lineage: lineage})
}

// testTFStates: Terraform state as knit's HTTP backend keeps it: binary
// bytes round-trip; a write needs the state locked, and while locked only
// the holder writes, deletes or unlocks; a refusal names the holder and
// changes nothing; the import of a work dir's local state never overwrites
// state or a lock.
func testTFStates(t *testing.T, s store.Store) {
	ctx := t.Context()
	const key = "team/web/db"
	lockFor(t, s, "team/web", "run-a")
	v1 := []byte("{\"serial\":1}\x00\xff")
	wantState(t, s, key, nil, "")
	wantTFLocked(t, put(s, key, "run-a", "", v1, 1, "l"), "write of an unlocked state", "")
	wantState(t, s, key, nil, "")
	must(t, s.LockTFState(ctx, key, store.TFLock{ID: "lock-0", Run: "run-a"}, nil))
	must(t, put(s, key, "run-a", "lock-0", v1, 1, "l"))
	must(t, s.UnlockTFState(ctx, key, "lock-0"))
	wantState(t, s, key, v1, "")

	info := []byte(`{"ID":"lock-a","Operation":"OperationTypeApply"}`)
	must(t, s.LockTFState(ctx, key, store.TFLock{ID: "lock-a", Info: info, Run: "run-a"}, nil))
	must(t, s.LockTFState(ctx, key, store.TFLock{ID: "lock-a", Info: info, Run: "run-a"}, nil)) // the holder again
	wantTFLocked(t, s.LockTFState(ctx, key, store.TFLock{ID: "lock-b", Run: "run-a"}, nil), "second lock", "lock-a")
	wantTFLocked(t, put(s, key, "run-a", "lock-b", []byte("b"), 2, "l"), "write by another lock", "lock-a")
	wantTFLocked(t, put(s, key, "run-a", "", []byte("b"), 2, "l"), "write without the lock", "lock-a")
	wantTFLocked(t, s.DeleteTFState(ctx, key, store.TFWrite{Run: "run-a", LockID: "lock-b"}), "delete by another lock", "lock-a")
	wantTFLocked(t, s.UnlockTFState(ctx, key, "lock-b"), "unlock with a wrong ID", "lock-a")
	wantState(t, s, key, v1, "lock-a")
	if _, l, _ := s.TFState(ctx, key); string(l.Info) != string(info) {
		t.Errorf("lock info = %s, want %s", l.Info, info)
	}

	v2 := []byte(`{"serial":2}`)
	must(t, put(s, key, "run-a", "lock-a", v2, 2, "l"))
	if done, err := s.ImportTFState(ctx, key, []byte("old")); err != nil || done {
		t.Errorf("import over state = %v, %v; want false", done, err)
	}
	must(t, s.UnlockTFState(ctx, key, "lock-a"))
	wantState(t, s, key, v2, "")
	wantTFLocked(t, s.UnlockTFState(ctx, key, "lock-a"), "unlock of an unlocked state", "")

	// A lock on a key with no state yet, and a delete under a lock.
	must(t, s.LockTFState(ctx, "team/web/new", store.TFLock{ID: "l", Run: "run-a"}, nil))
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
	must(t, s.LockTFState(ctx, key, store.TFLock{ID: "lock-c", Run: "run-a"}, nil))
	must(t, s.DeleteTFState(ctx, key, store.TFWrite{Run: "run-a", LockID: "lock-c"}))
	wantState(t, s, key, nil, "")
	wantTFLocked(t, s.LockTFState(ctx, key, store.TFLock{ID: "lock-d", Run: "run-a"}, nil), "lock after a delete under lock", "lock-c")
	must(t, s.UnlockTFState(ctx, key, "lock-c"))
	wantTFLocked(t, s.DeleteTFState(ctx, "team/web/new", store.TFWrite{Run: "run-a"}), "delete of an unlocked state", "")
	must(t, s.LockTFState(ctx, "team/web/new", store.TFLock{ID: "l2", Run: "run-a"}, nil))
	must(t, s.DeleteTFState(ctx, "team/web/new", store.TFWrite{Run: "run-a", LockID: "l2"}))
	must(t, s.UnlockTFState(ctx, "team/web/new", "l2"))
	if n, err := s.CountTFStates(ctx); err != nil || n != 0 {
		t.Errorf("CountTFStates after deletes = %d, %v; want 0", n, err)
	}

	// A lock whose holder dead reports gone is taken over; a live one is not.
	must(t, s.LockTFState(ctx, key, store.TFLock{ID: "dead", Host: "h1", PID: 41}, nil))
	var asked store.TFLock
	alive := func(h store.TFLock) bool { asked = h; return false }
	wantTFLocked(t, s.LockTFState(ctx, key, store.TFLock{ID: "new", Host: "h1", PID: 42}, alive), "lock over a live holder", "dead")
	if asked.ID != "dead" || asked.Host != "h1" || asked.PID != 41 {
		t.Errorf("dead was asked about %+v, want the holder dead@h1 pid 41", asked)
	}
	must(t, s.LockTFState(ctx, key, store.TFLock{ID: "new", Host: "h1", PID: 42}, func(store.TFLock) bool { return true }))
	if _, l, _ := s.TFState(ctx, key); l.ID != "new" || l.Host != "h1" || l.PID != 42 {
		t.Errorf("the new holder is %+v, want h1 pid 42", l)
	}
	must(t, s.UnlockTFState(ctx, key, "new"))
}

// testTFStateFence: every access through a grant is fenced by the
// environment's lock inside its own transaction. A grant of a run that no
// longer holds the lock (its run ended, or a recovery run took the lock
// over) reads, writes, deletes and locks nothing; a grant with no run
// neither; nor a run holding another environment. A write never moves
// the serial back nor changes the lineage, and a refusal changes nothing.
func testTFStateFence(t *testing.T, s store.Store) {
	ctx := t.Context()
	const key = "team/web/db"
	lockFor(t, s, "team/web", "run-a")
	lockFor(t, s, "team/other", "run-o")
	v3 := []byte(`{"serial":3,"lineage":"L"}`)
	must(t, s.LockTFState(ctx, key, store.TFLock{ID: "tool-a", Run: "run-a"}, nil))
	must(t, put(s, key, "run-a", "tool-a", v3, 3, "L"))
	if got, err := s.ReadTFState(ctx, key, "run-a"); err != nil || !bytes.Equal(got, v3) {
		t.Fatalf("read by the holder = %q, %v; want %q", got, err, v3)
	}

	// Older serial, other lineage: refused, even by the holder.
	for _, w := range []store.TFWrite{{Serial: 2, Lineage: "L"}, {Serial: 4, Lineage: "M"}, {Serial: 4, Lineage: ""}} {
		w.Run, w.LockID = "run-a", "tool-a"
		if err := s.PutTFState(ctx, key, []byte("old"), w); !errors.Is(err, store.ErrTFStateConflict) {
			t.Errorf("write of serial %d lineage %q over 3 %q: err = %v, want ErrTFStateConflict", w.Serial, w.Lineage, "L", err)
		}
	}
	must(t, put(s, key, "run-a", "tool-a", v3, 3, "L")) // the same serial again: a tool persisting twice
	wantState(t, s, key, v3, "tool-a")

	// Grants of runs that do not hold team/web's lock.
	for _, run := range []string{"", "run-o", "run-x"} {
		if _, err := s.ReadTFState(ctx, key, run); !errors.Is(err, store.ErrLockLost) {
			t.Errorf("read for run %q: err = %v, want ErrLockLost", run, err)
		}
		if err := put(s, key, run, "tool-a", []byte("x"), 9, "L"); !errors.Is(err, store.ErrLockLost) {
			t.Errorf("write for run %q: err = %v, want ErrLockLost", run, err)
		}
		if err := s.DeleteTFState(ctx, key, store.TFWrite{Run: run, LockID: "tool-a"}); !errors.Is(err, store.ErrLockLost) {
			t.Errorf("delete for run %q: err = %v, want ErrLockLost", run, err)
		}
	}

	// run-a's lease ended; run-b took the environment over: run-a's grant,
	// with the state lock it still names, is refused everything.
	lockFor(t, s, "team/web", "run-b")
	if _, err := s.ReadTFState(ctx, key, "run-a"); !errors.Is(err, store.ErrLockLost) {
		t.Errorf("read by the finished run: err = %v, want ErrLockLost", err)
	}
	if err := put(s, key, "run-a", "tool-a", []byte("late"), 4, "L"); !errors.Is(err, store.ErrLockLost) {
		t.Errorf("late write by the finished run: err = %v, want ErrLockLost", err)
	}
	if err := s.DeleteTFState(ctx, key, store.TFWrite{Run: "run-a", LockID: "tool-a"}); !errors.Is(err, store.ErrLockLost) {
		t.Errorf("delete by the finished run: err = %v, want ErrLockLost", err)
	}
	if err := s.LockTFState(ctx, key, store.TFLock{ID: "tool-a2", Run: "run-a"}, nil); !errors.Is(err, store.ErrLockLost) {
		t.Errorf("lock by the finished run: err = %v, want ErrLockLost", err)
	}
	wantState(t, s, key, v3, "tool-a")
	// run-b takes the stale state lock over and writes on.
	must(t, s.LockTFState(ctx, key, store.TFLock{ID: "tool-b", Run: "run-b"}, nil))
	must(t, put(s, key, "run-b", "tool-b", []byte("v4"), 4, "L"))
	must(t, s.ReleaseLock(ctx, "team/web", "run-b"))
	if _, err := s.ReadTFState(ctx, key, "run-b"); !errors.Is(err, store.ErrLockLost) {
		t.Errorf("read after the run released the environment: err = %v, want ErrLockLost", err)
	}
	wantState(t, s, key, []byte("v4"), "tool-b")
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
	must(t, s.LockTFState(ctx, key, store.TFLock{ID: "tool-a", Host: "replica-1", PID: 11, Run: "run-a"}, never))
	must(t, put(s, key, "run-a", "tool-a", []byte("v1"), 1, ""))
	if _, l, _ := s.TFState(ctx, key); l.Run != "run-a" || l.Host != "replica-1" {
		t.Errorf("state lock = %+v, want run-a's on replica-1", l)
	}
	// run-a holds the environment: a concurrent lock, even for a live run
	// (of another environment), is refused.
	lockFor(t, s, "team/other", "run-o")
	if err := s.LockTFState(ctx, key, store.TFLock{ID: "tool-o", Host: "replica-2", PID: 22, Run: "run-o"}, never); !errors.Is(err, store.ErrLockLost) {
		t.Errorf("lock for a run of another environment: err = %v, want ErrLockLost", err)
	}
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
	if err := put(s, key, "run-a", "tool-a", []byte("zombie"), 2, ""); !errors.Is(err, store.ErrLockLost) {
		t.Errorf("write by the taken-over run: err = %v, want ErrLockLost", err)
	}
	wantTFLocked(t, put(s, key, "run-b", "tool-a", []byte("zombie"), 2, ""), "write by the taken-over lock", "tool-b")
	wantTFLocked(t, s.UnlockTFState(ctx, key, "tool-a"), "unlock by the taken-over lock", "tool-b")
	must(t, put(s, key, "run-b", "tool-b", []byte("v2"), 2, ""))

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
