package engine_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"knit.dev/knit/internal/engine"
	"knit.dev/knit/internal/store"
)

// failingStore fails the failAt-th write (counting from 1) and counts all.
type failingStore struct {
	store.Store
	mu     sync.Mutex
	n      int
	failAt int
	failOp string         // or fails the first write of this method
	failed string         // the write that failed
	calls  map[string]int // writes by method
}

var errInjected = errors.New("injected write failure")

func (f *failingStore) write(op string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.n++
	if f.calls == nil {
		f.calls = map[string]int{}
	}
	f.calls[op]++
	if f.n == f.failAt || (op == f.failOp && f.failed == "") {
		f.failed = op
		return fmt.Errorf("%s: %w", op, errInjected)
	}
	return nil
}

func (f *failingStore) PutRevision(ctx context.Context, e store.Environment, r store.Revision) (store.Revision, error) {
	if err := f.write("PutRevision"); err != nil {
		return store.Revision{}, err
	}
	return f.Store.PutRevision(ctx, e, r)
}
func (f *failingStore) SetAppliedRevision(ctx context.Context, env string, n int) error {
	if err := f.write("SetAppliedRevision"); err != nil {
		return err
	}
	return f.Store.SetAppliedRevision(ctx, env, n)
}
func (f *failingStore) SetEnvironmentStatus(ctx context.Context, id string, status store.EnvStatus) error {
	if err := f.write("SetEnvironmentStatus"); err != nil {
		return err
	}
	return f.Store.SetEnvironmentStatus(ctx, id, status)
}
func (f *failingStore) CreateRun(ctx context.Context, r store.Run) error {
	if err := f.write("CreateRun"); err != nil {
		return err
	}
	return f.Store.CreateRun(ctx, r)
}
func (f *failingStore) StartRun(ctx context.Context, e store.Environment, rev *store.Revision, r store.Run) (store.Revision, error) {
	if err := f.write("StartRun"); err != nil {
		return store.Revision{}, err
	}
	return f.Store.StartRun(ctx, e, rev, r)
}
func (f *failingStore) FinishRun(ctx context.Context, id string, status store.RunStatus, msg string, at time.Time) error {
	if err := f.write("FinishRun"); err != nil {
		return err
	}
	return f.Store.FinishRun(ctx, id, status, msg, at)
}
func (f *failingStore) RecordOutcome(ctx context.Context, o store.RunOutcome) error {
	if err := f.write("RecordOutcome"); err != nil {
		return err
	}
	return f.Store.RecordOutcome(ctx, o)
}
func (f *failingStore) InterruptRuns(ctx context.Context, env string, alive func(int) bool, at time.Time) ([]string, error) {
	if err := f.write("InterruptRuns"); err != nil {
		return nil, err
	}
	return f.Store.InterruptRuns(ctx, env, alive, at)
}
func (f *failingStore) StartComponentRun(ctx context.Context, crs ...*store.ComponentRun) error {
	if err := f.write("StartComponentRun"); err != nil {
		return err
	}
	return f.Store.StartComponentRun(ctx, crs...)
}
func (f *failingStore) FinishComponentRun(ctx context.Context, cr store.ComponentRun, st *store.ComponentState) error {
	if err := f.write("FinishComponentRun"); err != nil {
		return err
	}
	return f.Store.FinishComponentRun(ctx, cr, st)
}
func (f *failingStore) AcquireLock(ctx context.Context, l store.Lock, lease time.Duration, dead func(store.Lock) bool) (store.Lock, error) {
	if err := f.write("AcquireLock"); err != nil {
		return store.Lock{}, err
	}
	return f.Store.AcquireLock(ctx, l, lease, dead)
}
func (f *failingStore) ReleaseLock(ctx context.Context, env, runID string) error {
	if err := f.write("ReleaseLock"); err != nil {
		return err
	}
	return f.Store.ReleaseLock(ctx, env, runID)
}
func (f *failingStore) CreateApproval(ctx context.Context, a *store.Approval) error {
	if err := f.write("CreateApproval"); err != nil {
		return err
	}
	return f.Store.CreateApproval(ctx, a)
}
func (f *failingStore) DecideApproval(ctx context.Context, id int64, from, to, actor, reason string, at time.Time) error {
	if err := f.write("DecideApproval"); err != nil {
		return err
	}
	return f.Store.DecideApproval(ctx, id, from, to, actor, reason, at)
}
func (f *failingStore) AppendAudit(ctx context.Context, e store.AuditEvent) error {
	if err := f.write("AppendAudit"); err != nil {
		return err
	}
	return f.Store.AppendAudit(ctx, e)
}

// TestAFailedStoreWriteNeverClaimsSuccess fails each write of a run in
// turn (an apply with a gated component, then its approval and the apply
// that uses it) and checks that the run then reports an error, and that
// the store never records it succeeded when the failed write mattered.
func TestAFailedStoreWriteNeverClaimsSuccess(t *testing.T) {
	ctx := context.Background()
	scenario := func(h *harness, fs *failingStore) error {
		env := parse(t, gated)
		res, err := h.e.Apply(ctx, env, engine.Options{Actor: "tester"})
		if err != nil {
			return err
		}
		if res.Status != store.StatusAwaiting {
			return fmt.Errorf("first apply %s: %s", res.Status, res.Error)
		}
		if _, err := h.e.Decide(ctx, env, "d", true, "alice", "ok"); err != nil {
			return err
		}
		res, err = h.e.Apply(ctx, env, engine.Options{Actor: "alice"})
		if err != nil {
			return err
		}
		if res.Status != store.StatusSucceeded {
			return fmt.Errorf("second apply %s: %s", res.Status, res.Error)
		}
		return nil
	}
	// Count the writes of a clean run.
	h := newHarness(t)
	fs := &failingStore{Store: h.st}
	h.e.Store = fs
	if err := scenario(h, fs); err != nil {
		t.Fatal(err)
	}
	total := fs.n
	if total < 20 {
		t.Fatalf("only %d writes counted", total)
	}
	for n := 1; n <= total; n++ {
		h := newHarness(t)
		fs := &failingStore{Store: h.st, failAt: n}
		h.e.Store = fs
		err := scenario(h, fs)
		if err == nil {
			t.Errorf("write %d (%s) failed, and the scenario claimed success", n, fs.failed)
			continue
		}
		if !errors.Is(err, errInjected) && fs.failed != "" {
			// The failure surfaced as a failed run; its record must say so.
			runs, _ := h.st.Runs(ctx, "t/diamond", store.RunFilter{Limit: 1})
			if len(runs) == 1 && runs[0].Status == store.StatusSucceeded && fs.failed != "ReleaseLock" {
				t.Errorf("write %d (%s) failed, and the run is recorded succeeded", n, fs.failed)
			}
		}
	}
}

// TestARunThatLosesItsLeaseStopsAndCannotOverwriteTheNewHolder: the
// store's clock jumps past the lease while run A is busy; run B takes the
// lock over; A's renewal finds the lease lost, A stops, and every write A
// still tries is refused, so B's records stand.
func TestARunThatLosesItsLeaseStopsAndCannotOverwriteTheNewHolder(t *testing.T) {
	h := newHarness(t)
	clock := &storeClock{now: time.Now()}
	h.st.(interface{ SetClock(func() time.Time) }).SetClock(clock.Now)
	// Long enough that A, renewing every third of it, keeps the lease by
	// its own clock on a loaded machine: only the store's jump takes it.
	h.e.LockLease = 3 * time.Second
	started := make(chan struct{})
	h.r.Hook = onlyFirst("b", started) // A's tool runs until A is stopped
	env := parse(t, diamond)
	a, err := h.e.Start(context.Background(), engine.KindApply, env, engine.Options{Actor: "a"})
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-started:
	case <-a.Done():
		res, err := a.Wait(context.Background())
		t.Fatalf("run A ended (%+v, %v) before its tool for b started", res, err)
	case <-time.After(time.Minute):
		t.Fatal("run A's tool for b did not start within a minute")
	}
	clock.add(time.Hour) // A's lease is long over, as the store sees it
	other := &engine.Engine{Store: h.st, Runners: h.e.Runners, DataDir: h.dir, Host: "other-host", PID: 1}
	b, err := other.Apply(context.Background(), env, engine.Options{Actor: "b"})
	if err != nil || b.Status != store.StatusSucceeded {
		t.Fatalf("the new holder's run: %v %v", b, err)
	}
	res, err := waitRun(t, a)
	if !errors.Is(err, engine.ErrLockLost) {
		t.Fatalf("run A ended with %v (status %s), want ErrLockLost", err, res.Status)
	}
	rec, _ := h.st.Run(context.Background(), a.ID)
	if rec.Status != store.StatusInterrupted {
		t.Fatalf("run A recorded %s: the old holder overwrote what the new one recorded", rec.Status)
	}
	// A's outcome was refused whole: neither its audit event nor its
	// status for the environment overwrote what B recorded.
	if e, _ := h.st.Environment(context.Background(), "t/diamond"); e.Status != engine.EnvApplied {
		t.Errorf("environment %s after the new holder applied it: the old holder's outcome overwrote it", e.Status)
	}
	events, _ := h.st.Audit(context.Background(), store.AuditFilter{Env: "t/diamond"})
	for _, ev := range events {
		if ev.RunID == a.ID {
			t.Errorf("audit event %s (%s) of the old holder, whose outcome the store refused", ev.Action, ev.Detail)
		}
	}
	last, _ := h.st.LastComponentRun(context.Background(), "t/diamond", "b")
	if last.RunID != b.RunID {
		t.Fatalf("b's last component run is %s's, want the new holder's %s", last.RunID, b.RunID)
	}
	states, _ := h.st.ComponentStates(context.Background(), "t/diamond")
	for name, st := range states {
		if st.Status != "applied" {
			t.Errorf("%s: %s after the new holder applied everything", name, st.Status)
		}
	}
}

// onlyFirst blocks the first apply of component until the run is stopped.
func onlyFirst(component string, started chan struct{}) func(context.Context, string, string) error {
	var mu sync.Mutex
	first := true
	return func(ctx context.Context, op, c string) error {
		mu.Lock()
		block := first && c == component && op == "apply"
		if block {
			first = false
			close(started)
		}
		mu.Unlock()
		if block {
			<-ctx.Done()
			return ctx.Err()
		}
		return nil
	}
}

type storeClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *storeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *storeClock) add(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

// TestADriftRecordsEveryCheckRunningInOneWrite: a drift starts every check
// at once, so it records them all running in one store write before the
// first plan, and a refusal of that write fails every check and the run,
// plans nothing and leaves no component run running.
func TestADriftRecordsEveryCheckRunningInOneWrite(t *testing.T) {
	ctx := context.Background()
	h := newHarness(t)
	env := h.applied(t, chain4)
	latest := func() (store.Run, []store.ComponentRun) {
		t.Helper()
		runs, err := h.st.Runs(ctx, "t/chain", store.RunFilter{Limit: 1})
		if err != nil || len(runs) != 1 {
			t.Fatalf("latest run: %v %v", runs, err)
		}
		crs, err := h.st.ComponentRuns(ctx, runs[0].ID)
		if err != nil {
			t.Fatal(err)
		}
		return runs[0], crs
	}
	fs := &failingStore{Store: h.st}
	h.e.Store = fs
	h.r.Hook = func(ctx context.Context, op, comp string) error {
		if _, crs := latest(); op == "plan" && len(crs) != 4 {
			return fmt.Errorf("%s planned with %d of 4 checks recorded", comp, len(crs))
		}
		return nil
	}
	res, err := h.e.Drift(ctx, env, engine.Options{Actor: "tester", Parallelism: 1}, false)
	if err != nil {
		t.Fatal(err)
	}
	wantStatuses(t, res, map[string]engine.Status{"a": engine.InSync, "b": engine.InSync, "c": engine.InSync, "d": engine.InSync})
	if n := fs.calls["StartComponentRun"]; n != 1 {
		t.Errorf("the drift made %d StartComponentRun writes, want 1", n)
	}

	fs = &failingStore{Store: h.st, failOp: "StartComponentRun"}
	h.e.Store = fs
	h.r.Hook = func(ctx context.Context, op, comp string) error {
		if op == "plan" {
			t.Errorf("%s planned although its check was never recorded", comp)
		}
		return nil
	}
	res, err = h.e.Drift(ctx, env, engine.Options{Actor: "tester"}, false)
	if fs.failed == "" {
		t.Fatal("the drift never tried to record its checks")
	}
	if err == nil && res.Status == store.StatusSucceeded {
		t.Error("the drift succeeded although its checks could not be recorded")
	}
	if res != nil {
		// The roots fail; what depends on them is skipped, as behind any failed check.
		wantStatuses(t, res, map[string]engine.Status{"a": engine.Failed, "b": engine.Skipped, "c": engine.Skipped, "d": engine.Skipped})
	}
	run, crs := latest()
	if run.Status == store.StatusSucceeded || run.Status == store.StatusRunning {
		t.Errorf("run recorded %s", run.Status)
	}
	for _, cr := range crs {
		if cr.Status == string(store.StatusRunning) {
			t.Errorf("%s left running", cr.Component)
		}
	}
}
