// Package queuetest is the conformance suite of knit serve's run queue
// port (controller.Queue): the in-process queue (runqueue) and the
// database's (riverqueue, on PostgreSQL) pass the same tests, so a rule
// both keep (what resumes after a crash, and as what; cancel; lookups)
// cannot drift between them.
package queuetest

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"sync/atomic"
	"testing"
	"time"

	"knit.dev/knit/internal/controller"
	"knit.dev/knit/internal/controller/runqueue"
	"knit.dev/knit/internal/engine"
	"knit.dev/knit/internal/knit"
	"knit.dev/knit/internal/spec"
	"knit.dev/knit/internal/store"
	"knit.dev/knit/internal/view"
)

// hangGuard bounds every wait: never a timing assertion, only what turns
// a hang into a failure.
const hangGuard = time.Minute

// Setup is what the suite asks of a new queue.
type Setup struct {
	// Max is the queue's bound on runs at once.
	Max int
	// Hook runs at the start of every plan, apply and destroy of a
	// component (the fake runner's Hook): the suite blocks runs with it.
	Hook func(ctx context.Context, op, component string) error
}

// Harness is one queue under test, over its library and store.
type Harness struct {
	Queue controller.Queue
	Knit  *knit.Knit
	Store store.Store
	// Start runs the queue until the test ends, with what resumes
	// interrupted runs in it: Resume before Run, or the leader's Reap
	// beside it.
	Start func(t *testing.T)
}

// New builds a fresh queue (and store) for one test. Components of type
// script run in a fake runner with s.Hook.
type New func(t *testing.T, s Setup) Harness

// Run runs every test of the suite against queues newQueue builds.
func Run(t *testing.T, newQueue New) {
	for _, c := range []struct {
		name string
		test func(*testing.T, New)
	}{
		{"EnqueueRunsOnceAndIsKnownByID", testEnqueue},
		{"ARunIDGivenIsKept", testGivenRunID},
		{"RefusedRunTellsWhy", testRefused},
		{"QueuedRunWaitsAndCancels", testCancelQueued},
		{"CancelRunning", testCancelRunning},
		{"ResumeAfterCrash", testResumeAfterCrash},
		{"RollbackResumesToItsTarget", testResumeRollback},
	} {
		t.Run(c.name, func(t *testing.T) { c.test(t, newQueue) })
	}
}

// envDoc is an environment of one script component.
func envDoc(team, name string) string {
	return `apiVersion: knit.dev/v1
kind: Environment
metadata: {name: ` + name + `}
spec:
  teamName: ` + team + `
  envName: ` + name + `
  autoApprove: true
  components:
    - name: app
      type: script
      script: {apply: "true"}
`
}

// applied applies env name of team through the library (not the queue)
// and returns its ID.
func applied(t *testing.T, h Harness, team, name string) string {
	t.Helper()
	env, diags := spec.Parse(name+".yaml", t.TempDir(), []byte(envDoc(team, name)))
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	res, err := knit.NewRun(h.Knit, knit.RunRequest{Kind: engine.KindApply, Env: env, Actor: "t"}).Run(context.Background())
	if err != nil || res.Status != store.StatusSucceeded {
		t.Fatalf("apply %s: %+v %v", env.ID(), res, err)
	}
	return env.ID()
}

// waitFor polls cond until it holds, failing after hangGuard.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(hangGuard)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("waited for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// ended waits for run id's record to say it is over, and returns it.
func ended(t *testing.T, h Harness, id string) view.Run {
	t.Helper()
	var r view.Run
	waitFor(t, "run "+id+" to end", func() bool {
		rec, err := h.Knit.RunRecord(context.Background(), id)
		if err != nil && !errors.Is(err, store.ErrNotFound) {
			t.Fatal(err)
		}
		r = rec.Run
		return err == nil && r.Status != store.StatusRunning
	})
	return r
}

func testEnqueue(t *testing.T, newQueue New) {
	h := newQueue(t, Setup{Max: 2})
	env := applied(t, h, "pay", "one")
	outcomes := make(chan runqueue.Outcome, 10)
	h.Queue.OnFinish(func(o runqueue.Outcome) { outcomes <- o })
	id, err := h.Queue.Enqueue(knit.RunRequest{Kind: engine.KindApply, EnvRef: env, Actor: "t", Reason: "conformance"}, env)
	if err != nil {
		t.Fatal(err)
	}
	// Known by ID before it starts: queued, with its environment.
	if got, ok := h.Queue.Queued(id); !ok || got != env {
		t.Fatalf("Queued(%s) before Run = %q %v, want %s true", id, got, ok, env)
	}
	if j, ok := h.Queue.Job(id); !ok || j.Env != env || j.Req.Kind != engine.KindApply || j.ID != id {
		t.Fatalf("Job(%s) before Run = %+v %v", id, j, ok)
	}
	if !h.Queue.PendingFor(env) {
		t.Fatalf("PendingFor(%s) before Run = false, want true", env)
	}
	if _, ok := h.Queue.Queued("no-such-run"); ok {
		t.Fatal("Queued knows a run nobody queued")
	}
	h.Start(t)
	r := ended(t, h, id)
	if r.Status != store.StatusSucceeded || r.Kind != engine.KindApply || r.Actor != "t" || r.Reason != "conformance" {
		t.Fatalf("the queued run's record: %+v", r)
	}
	select {
	case o := <-outcomes:
		if o.Job.ID != id || o.Result == nil || o.Result.Status != store.StatusSucceeded {
			t.Fatalf("outcome %+v (result %+v)", o, o.Result)
		}
	case <-time.After(hangGuard):
		t.Fatal("no outcome of the run")
	}
	if h.Queue.PendingFor(env) {
		t.Fatalf("PendingFor(%s) after its run = true", env)
	}
	runs, err := h.Store.Runs(context.Background(), env, store.RunFilter{Kind: engine.KindApply})
	if err != nil {
		t.Fatal(err)
	}
	if len(runs) != 2 { // the setup's apply, and the queued one once
		t.Fatalf("%d applies of %s recorded, want 2", len(runs), env)
	}
}

func testRefused(t *testing.T, newQueue New) {
	h := newQueue(t, Setup{Max: 2})
	h.Start(t)
	told := make(chan error, 1)
	if _, err := h.Queue.EnqueueWith(knit.RunRequest{Kind: engine.KindPlan, EnvRef: "no/such", Actor: "t"}, "no/such",
		func(err error) { told <- err }); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-told:
		if err == nil {
			t.Fatal("a run of an unknown environment started")
		}
	case <-time.After(hangGuard):
		t.Fatal("onStart never told")
	}
}

// blocker, once armed, blocks every destroy until release (the setup's
// applies go through; a teardown destroys).
type blocker struct {
	armed   atomic.Bool
	started chan string
	release chan struct{}
}

func newBlocker() *blocker {
	return &blocker{started: make(chan string, 10), release: make(chan struct{})}
}

func (b *blocker) hook(ctx context.Context, op, component string) error {
	if op != "destroy" || !b.armed.Load() {
		return nil
	}
	b.started <- component
	select {
	case <-b.release:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (b *blocker) waitStarted(t *testing.T) {
	t.Helper()
	select {
	case <-b.started:
	case <-time.After(hangGuard):
		t.Fatal("the blocked destroy never started")
	}
}

func testCancelQueued(t *testing.T, newQueue New) {
	b := newBlocker()
	h := newQueue(t, Setup{Max: 1, Hook: b.hook})
	busy := applied(t, h, "pay", "busy")
	later := applied(t, h, "pay", "later")
	b.armed.Store(true)
	defer close(b.release)
	h.Start(t)
	first, err := h.Queue.Enqueue(knit.RunRequest{Kind: engine.KindTeardown, EnvRef: busy, Actor: "t"}, busy)
	if err != nil {
		t.Fatal(err)
	}
	b.waitStarted(t) // the one slot is taken
	told := make(chan error, 1)
	id, err := h.Queue.EnqueueWith(knit.RunRequest{Kind: engine.KindApply, EnvRef: later, Actor: "t"}, later,
		func(err error) { told <- err })
	if err != nil {
		t.Fatal(err)
	}
	if !h.Queue.PendingFor(later) {
		t.Fatalf("PendingFor(%s) = false while it waits for the slot", later)
	}
	if env, ok := h.Queue.Queued(id); !ok || env != later {
		t.Fatalf("Queued(%s) = %q %v while it waits", id, env, ok)
	}
	if err := h.Queue.Cancel(id); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-told:
		if !errors.Is(err, runqueue.ErrCancelled) {
			t.Fatalf("onStart of the cancelled run: %v, want ErrCancelled", err)
		}
	case <-time.After(hangGuard):
		t.Fatal("onStart never told of the cancel")
	}
	if h.Queue.PendingFor(later) {
		t.Fatal("a cancelled run still waits")
	}
	b.release <- struct{}{}
	if r := ended(t, h, first); r.Status != store.StatusSucceeded {
		t.Fatalf("the run that held the slot: %+v", r)
	}
	if _, err := h.Knit.RunRecord(context.Background(), id); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("the cancelled run was recorded (it ran): %v", err)
	}
}

func testCancelRunning(t *testing.T, newQueue New) {
	b := newBlocker()
	h := newQueue(t, Setup{Max: 1, Hook: b.hook})
	env := applied(t, h, "pay", "long")
	b.armed.Store(true)
	h.Start(t)
	id, err := h.Queue.Enqueue(knit.RunRequest{Kind: engine.KindTeardown, EnvRef: env, Actor: "t"}, env)
	if err != nil {
		t.Fatal(err)
	}
	b.waitStarted(t)
	if err := h.Queue.Cancel(id); err != nil {
		t.Fatal(err)
	}
	if r := ended(t, h, id); r.Status == store.StatusSucceeded {
		t.Fatalf("the cancelled run: %+v, want it stopped", r)
	}
}

// testResumeAfterCrash: runs a crashed server left recorded running (its
// process gone, its lock left behind) are resumed as knit.ResumeKind
// says, by whatever resumes them in the queue: a drift check as a drift
// check, a rollback that recorded no revision as an apply, a teardown as
// a teardown; a plan not (testResumeRollback: a rollback that did).
func testResumeAfterCrash(t *testing.T, newQueue New) {
	h := newQueue(t, Setup{Max: 4})
	cases := []struct {
		name      string
		kind      store.RunKind
		want      store.RunKind
		resumed   bool
		crashedID string
		env       string
	}{
		{name: "drifting", kind: engine.KindDrift, want: engine.KindDrift, resumed: true},
		{name: "rolling", kind: engine.KindRollback, want: engine.KindApply, resumed: true},
		{name: "leaving", kind: engine.KindTeardown, want: engine.KindTeardown, resumed: true},
		{name: "planning", kind: engine.KindPlan},
	}
	dead := deadPID(t)
	host, _ := os.Hostname()
	for i := range cases {
		c := &cases[i]
		c.env = applied(t, h, "ops", c.name)
		c.crashedID = crash(t, h, c.env, c.kind, host, dead)
	}
	h.Start(t)
	for _, c := range cases {
		if !c.resumed {
			continue
		}
		waitFor(t, c.env+"'s resume", func() bool { return recovery(t, h, c.env) != nil })
		r := ended(t, h, recovery(t, h, c.env).ID)
		if r.Kind != c.want || r.Status != store.StatusSucceeded {
			t.Errorf("%s interrupted by a crash resumed as %s (%s), want %s succeeded", c.kind, r.Kind, r.Status, c.want)
		}
	}
	// Every resume is over: a plan's would have been queued with them.
	for _, c := range cases {
		if !c.resumed {
			if r := recovery(t, h, c.env); r != nil {
				t.Errorf("a plan interrupted by a crash was resumed as %s (%s)", r.Kind, r.ID)
			}
		}
	}
}

// crash records a run of env of kind as a process that died left it:
// running, its environment's lock held by the dead process on this
// host, lapsed.
func crash(t *testing.T, h Harness, env string, kind store.RunKind, host string, pid int) string {
	t.Helper()
	return crashAt(t, h, store.Run{Env: env, Kind: kind}, host, pid)
}

// crashAt is crash of r (its env, kind and revision).
func crashAt(t *testing.T, h Harness, r store.Run, host string, pid int) string {
	t.Helper()
	ctx := context.Background()
	id, env := knit.NewRunID(), r.Env
	if err := h.Store.CreateRun(ctx, store.Run{ID: id, Env: env, Kind: r.Kind, Revision: r.Revision, Status: store.StatusRunning, Actor: "t",
		PID: pid, StartedAt: time.Now()}); err != nil {
		t.Fatal(err)
	}
	if _, err := h.Store.AcquireLock(ctx, store.Lock{Env: env, RunID: id, Owner: "t", PID: pid, Host: host},
		time.Millisecond, func(store.Lock) bool { return true }); err != nil {
		t.Fatal(err)
	}
	return id
}

// recovery is env's newest run started by a resume, nil if none.
func recovery(t *testing.T, h Harness, env string) *store.Run {
	t.Helper()
	runs, err := h.Store.Runs(context.Background(), env, store.RunFilter{})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range runs {
		if r.Source == knit.SourceRecovery {
			return &r
		}
	}
	return nil
}

// deadPID is the PID of a process that has ended.
func deadPID(t *testing.T) int {
	t.Helper()
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	return cmd.Process.Pid
}
