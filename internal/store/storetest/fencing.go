package storetest

import (
	"errors"
	"testing"
	"time"

	"knit.dev/knit/internal/store"
)

// The fence: a run's component-run writes need its environment's lock, and
// FinishRun refuses a run whose lock another run took or that is no longer
// running. These tests play run A, whose lease expired (by the store's
// clock) while it was stuck, and run B, which took the lock over.

func startRun(t *testing.T, s store.Store, id string, pid int, started time.Time) {
	t.Helper()
	must(t, s.CreateRun(t.Context(), store.Run{ID: id, Env: "team/web", Kind: "apply", Status: store.StatusRunning, PID: pid, StartedAt: started}))
}

func wantLockLost(t *testing.T, err error, what string) {
	t.Helper()
	if !errors.Is(err, store.ErrLockLost) {
		t.Errorf("%s: err = %v, want store.ErrLockLost", what, err)
	}
}

// componentRuns reads runID's component runs as component → status.
func componentRuns(t *testing.T, s store.Store, runID string) map[string]string {
	t.Helper()
	crs, err := s.ComponentRuns(t.Context(), runID)
	must(t, err)
	out := map[string]string{}
	for _, cr := range crs {
		out[cr.Component] = cr.Status
	}
	return out
}

// testFencing: B took over and marked A interrupted; A's writes are all
// refused, write nothing, and B's records stand.
func testFencing(t *testing.T, s store.Store, c *clock) {
	ctx := t.Context()
	must(t, acquire(t, s, holder("team/web", "run-a"), time.Minute, nil))
	startRun(t, s, "run-a", 1, at(0))
	crA := &store.ComponentRun{RunID: "run-a", Env: "team/web", Component: "db", Operation: "apply", StartedAt: at(0)}
	must(t, s.StartComponentRun(ctx, crA))

	c.set(at(2 * time.Minute))
	must(t, acquire(t, s, holder("team/web", "run-b"), time.Minute, nil))
	startRun(t, s, "run-b", 2, at(2*time.Minute))
	_, err := s.InterruptRuns(ctx, "team/web", func(pid int) bool { return pid == 2 }, at(2*time.Minute))
	must(t, err)
	crB := &store.ComponentRun{RunID: "run-b", Env: "team/web", Component: "db", Operation: "apply", StartedAt: at(2 * time.Minute)}
	must(t, s.StartComponentRun(ctx, crB))
	crB.Status, crB.FinishedAt = "applied", at(3*time.Minute)
	must(t, s.FinishComponentRun(ctx, *crB, &store.ComponentState{Status: "applied", Fingerprint: "b", Revision: 2}))

	// run-a comes back: every write is refused.
	wantLockLost(t, s.StartComponentRun(ctx, &store.ComponentRun{RunID: "run-a", Env: "team/web", Component: "web", StartedAt: at(4 * time.Minute)}),
		"StartComponentRun of the old holder")
	crA.Status, crA.FinishedAt = "applied", at(4*time.Minute)
	wantLockLost(t, s.FinishComponentRun(ctx, *crA, &store.ComponentState{Status: "applied", Fingerprint: "a", Revision: 1}),
		"FinishComponentRun of the old holder")
	wantLockLost(t, s.FinishRun(ctx, "run-a", store.StatusSucceeded, "", at(4*time.Minute)), "FinishRun of the old holder")

	// …and wrote nothing.
	equal(t, "run-a's component runs", componentRuns(t, s, "run-a"), map[string]string{"db": string(store.StatusInterrupted)})
	equal(t, "run-b's component runs", componentRuns(t, s, "run-b"), map[string]string{"db": "applied"})
	states, err := s.ComponentStates(ctx, "team/web")
	must(t, err)
	if states["db"].Fingerprint != "b" {
		t.Errorf("db's state %+v: the old holder overwrote the new one's", states["db"])
	}
	r, err := s.Run(ctx, "run-a")
	must(t, err)
	if r.Status != store.StatusInterrupted || !r.FinishedAt.Equal(at(2*time.Minute)) {
		t.Errorf("old run recorded %q finished at %v, want interrupted at %v", r.Status, r.FinishedAt, at(2*time.Minute))
	}
	// The holder finishes normally, also after releasing its lock.
	must(t, s.ReleaseLock(ctx, "team/web", "run-b"))
	must(t, s.FinishRun(ctx, "run-b", store.StatusSucceeded, "", at(5*time.Minute)))
}

// testFencingLiveRun: A's lease lapses. Until someone takes the lock A may
// still write; once B has it, A is refused even though A's record still
// says running, and FinishRun leaves that status alone.
func testFencingLiveRun(t *testing.T, s store.Store, c *clock) {
	ctx := t.Context()
	must(t, acquire(t, s, holder("team/web", "run-a"), time.Minute, nil))
	startRun(t, s, "run-a", 1, at(0))

	c.set(at(2 * time.Minute)) // expired, not taken over
	crA := &store.ComponentRun{RunID: "run-a", Env: "team/web", Component: "db", Operation: "apply", StartedAt: at(2 * time.Minute)}
	must(t, s.StartComponentRun(ctx, crA))

	must(t, acquire(t, s, holder("team/web", "run-b"), time.Minute, nil))
	startRun(t, s, "run-b", 2, at(2*time.Minute))
	crB := &store.ComponentRun{RunID: "run-b", Env: "team/web", Component: "db", Operation: "apply", StartedAt: at(2 * time.Minute)}
	must(t, s.StartComponentRun(ctx, crB))

	crA.Status, crA.FinishedAt = string(store.StatusSucceeded), at(3*time.Minute)
	wantLockLost(t, s.FinishComponentRun(ctx, *crA, &store.ComponentState{Status: "applied", Fingerprint: "a"}), "FinishComponentRun of the old holder")
	wantLockLost(t, s.StartComponentRun(ctx, &store.ComponentRun{RunID: "run-a", Env: "team/web", Component: "app"}), "StartComponentRun of the old holder")
	wantLockLost(t, s.FinishRun(ctx, "run-a", store.StatusSucceeded, "", at(3*time.Minute)), "FinishRun of the old holder")
	wantLockLost(t, s.RenewLock(ctx, "team/web", "run-a", time.Minute), "RenewLock of the old holder")
	must(t, s.ReleaseLock(ctx, "team/web", "run-a")) // a no-op: it must not free B's lock

	equal(t, "run-a's component runs", componentRuns(t, s, "run-a"), map[string]string{"db": string(store.StatusRunning)})
	equal(t, "run-b's component runs", componentRuns(t, s, "run-b"), map[string]string{"db": string(store.StatusRunning)})
	states, err := s.ComponentStates(ctx, "team/web")
	must(t, err)
	if len(states) != 0 {
		t.Errorf("the old holder wrote states %+v", states)
	}
	r, err := s.Run(ctx, "run-a")
	must(t, err)
	if r.Status != store.StatusRunning || !r.FinishedAt.IsZero() {
		t.Errorf("refused FinishRun changed run-a: %q finished at %v", r.Status, r.FinishedAt)
	}
	wantStoredLock(t, s, store.Lock{Env: "team/web", RunID: "run-b", Owner: "alice", PID: 7, Host: "laptop",
		Acquired: at(2 * time.Minute), Expires: at(3 * time.Minute)})
	crB.Status = string(store.StatusSucceeded)
	must(t, s.FinishComponentRun(ctx, *crB, nil))
	must(t, s.FinishRun(ctx, "run-b", store.StatusSucceeded, "", at(3*time.Minute)))
}

// testFencingNoLock: with no lock at all, component-run writes are refused
// (a run writes them only while it holds the lock), but FinishRun is
// allowed: a run ends after releasing its lock, and a lock no one holds was
// not taken over.
func testFencingNoLock(t *testing.T, s store.Store, _ *clock) {
	ctx := t.Context()
	startRun(t, s, "run-a", 1, at(0))
	wantLockLost(t, s.StartComponentRun(ctx, &store.ComponentRun{RunID: "run-a", Env: "team/web", Component: "db"}), "StartComponentRun without a lock")
	equal(t, "component runs written without a lock", componentRuns(t, s, "run-a"), map[string]string{})

	// Several at once are all refused: none is written.
	wantLockLost(t, s.StartComponentRun(ctx, &store.ComponentRun{RunID: "run-a", Env: "team/web", Component: "db"},
		&store.ComponentRun{RunID: "run-a", Env: "team/web", Component: "app"}), "StartComponentRun of two without a lock")
	equal(t, "component runs written without a lock", componentRuns(t, s, "run-a"), map[string]string{})

	must(t, acquire(t, s, holder("team/web", "run-a"), time.Minute, nil))
	cr := &store.ComponentRun{RunID: "run-a", Env: "team/web", Component: "db"}
	must(t, s.StartComponentRun(ctx, cr))
	must(t, s.ReleaseLock(ctx, "team/web", "run-a"))
	cr.Status = string(store.StatusSucceeded)
	wantLockLost(t, s.FinishComponentRun(ctx, *cr, nil), "FinishComponentRun after releasing the lock")
	equal(t, "component run after a refused finish", componentRuns(t, s, "run-a"), map[string]string{"db": string(store.StatusRunning)})

	must(t, s.FinishRun(ctx, "run-a", store.StatusFailed, "boom", at(time.Minute)))
	r, err := s.Run(ctx, "run-a")
	must(t, err)
	if r.Status != store.StatusFailed || r.Error != "boom" {
		t.Errorf("run after FinishRun without a lock: %q %q", r.Status, r.Error)
	}
	wantLockLost(t, s.FinishRun(ctx, "run-a", store.StatusSucceeded, "", at(2*time.Minute)), "finishing a run twice")
}
