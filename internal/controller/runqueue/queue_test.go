package runqueue_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"reflect"
	"runtime"
	"slices"
	"sync"
	"testing"
	"time"

	"knit.dev/knit/internal/adapters"
	"knit.dev/knit/internal/controller/clock"
	"knit.dev/knit/internal/controller/queuetest"
	"knit.dev/knit/internal/controller/runqueue"
	"knit.dev/knit/internal/engine"
	"knit.dev/knit/internal/knit"
	"knit.dev/knit/internal/runner"
	"knit.dev/knit/internal/runner/fake"
	"knit.dev/knit/internal/spec"
	"knit.dev/knit/internal/store"
)

// hangGuard bounds every wait: never a timing assertion, only what turns
// a hang into a failure.
const hangGuard = 15 * time.Second

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

const envDoc = `
apiVersion: knit.dev/v1
kind: Environment
metadata: {name: one}
spec:
  teamName: pay
  envName: one
  autoApprove: true
  components:
    - name: db
      type: script
      script: {apply: "true"}
`

func openKnit(t *testing.T) *knit.Knit {
	t.Helper()
	k, err := adapters.Open(context.Background(), adapters.Config{Config: knit.Config{DataDir: t.TempDir(),
		Runners: map[string]runner.Runner{spec.TypeScript: &fake.Runner{}}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { k.Close() })
	return k
}

// outcomes records the queue's outcomes in order.
type outcomes struct {
	mu   sync.Mutex
	envs []string
	seen chan runqueue.Outcome
}

func listen(q *runqueue.Queue) *outcomes {
	o := &outcomes{seen: make(chan runqueue.Outcome, 100)}
	q.OnFinish(func(out runqueue.Outcome) {
		o.mu.Lock()
		o.envs = append(o.envs, out.Job.Env)
		o.mu.Unlock()
		o.seen <- out
	})
	return o
}

func (o *outcomes) wait(t *testing.T, n int) []runqueue.Outcome {
	t.Helper()
	var out []runqueue.Outcome
	for len(out) < n {
		select {
		case x := <-o.seen:
			out = append(out, x)
		case <-time.After(hangGuard):
			t.Fatalf("%d outcomes of %d", len(out), n)
		}
	}
	return out
}

// run starts q.Run and returns what stops it and waits for it to return.
func run(t *testing.T, q *runqueue.Queue) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- q.Run(ctx) }()
	return func() {
		t.Helper()
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Fatalf("Run: %v", err)
			}
		case <-time.After(hangGuard):
			t.Fatal("Run did not return")
		}
	}
}

// TestFairAcrossEnvironments: with one slot, environments take turns: a
// burst of one environment's runs does not starve the others. Runs of
// environments knit does not know are refused at once, which is enough to
// see the order the queue starts them in.
func TestFairAcrossEnvironments(t *testing.T) {
	k := openKnit(t)
	q := runqueue.New(k, runqueue.Config{Max: 1, Logger: quiet, Clock: clock.NewFake(time.Now())})
	o := listen(q)
	for _, env := range []string{"a/x", "a/x", "a/x", "b/x", "c/x"} {
		if _, err := q.Enqueue(knit.RunRequest{Kind: engine.KindPlan, EnvRef: env}, env); err != nil {
			t.Fatal(err)
		}
	}
	if queued, running := q.Depth(); queued != 5 || running != 0 {
		t.Fatalf("before Run: %d queued, %d running; want 5, 0 (nothing starts before Run)", queued, running)
	}
	stop := run(t, q)
	defer stop()
	o.wait(t, 5)
	if want := []string{"a/x", "b/x", "c/x", "a/x", "a/x"}; !slices.Equal(o.envs, want) {
		t.Fatalf("started %v, want %v", o.envs, want)
	}
}

// TestCancelledWhileQueued: a job cancelled before it starts never runs,
// and its callback learns why.
func TestCancelledWhileQueued(t *testing.T) {
	k := openKnit(t)
	q := runqueue.New(k, runqueue.Config{Logger: quiet})
	told := make(chan error, 1)
	id, err := q.EnqueueWith(knit.RunRequest{Kind: engine.KindPlan, EnvRef: "a/x"}, "a/x", func(err error) { told <- err })
	if err != nil {
		t.Fatal(err)
	}
	if err := q.Cancel(id); err != nil {
		t.Fatal(err)
	}
	if err := <-told; !errors.Is(err, runqueue.ErrCancelled) {
		t.Fatalf("onStart: %v", err)
	}
	if q.PendingFor("a/x") {
		t.Fatal("a cancelled job still waits")
	}
}

// TestNothingOutlivesRun: once Run returns, the queue takes no more work,
// no timer of it is left to fire (a finished job is forgotten ten minutes
// later, by a timer Run stops) and none of its goroutines is left. The
// old queue's time.AfterFunc outlived the server's Close.
func TestNothingOutlivesRun(t *testing.T) {
	k := openKnit(t)
	ctx := context.Background()
	env, diags := spec.Parse("one.yaml", t.TempDir(), []byte(envDoc))
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	if res, err := knit.NewRun(k, knit.RunRequest{Kind: engine.KindApply, Env: env, Actor: "t"}).Run(ctx); err != nil || res.Status != store.StatusSucceeded {
		t.Fatalf("apply: %v %v", res, err)
	}
	baseline := runtime.NumGoroutine()

	fc := clock.NewFake(time.Now())
	q := runqueue.New(k, runqueue.Config{Logger: quiet, Clock: fc})
	o := listen(q)
	stop := run(t, q)
	applied, err := q.Enqueue(knit.RunRequest{Kind: engine.KindApply, EnvRef: "pay/one", Actor: "t"}, "pay/one")
	if err != nil {
		t.Fatal(err)
	}
	refused, err := q.Enqueue(knit.RunRequest{Kind: engine.KindPlan, EnvRef: "no/such"}, "no/such")
	if err != nil {
		t.Fatal(err)
	}
	outs := o.wait(t, 2)
	for _, out := range outs {
		if out.Job.ID == applied && (out.Result == nil || out.Result.Status != store.StatusSucceeded) {
			t.Fatalf("the apply: %+v", out)
		}
	}
	// Both jobs are known by ID, each with a timer to forget it.
	waitFor(t, "a forget timer per finished job", func() bool { return fc.Pending() == 2 })
	stop()

	if fc.Pending() != 0 {
		t.Fatalf("%d timers of the queue are left after Run returned", fc.Pending())
	}
	fc.Advance(time.Hour) // a timer left behind would fire now and forget the jobs
	for _, id := range []string{applied, refused} {
		if _, ok := q.Job(id); !ok {
			t.Fatalf("job %s was forgotten after Run returned: a timer outlived Run", id)
		}
	}
	if _, err := q.Enqueue(knit.RunRequest{Kind: engine.KindPlan, EnvRef: "pay/one"}, "pay/one"); !errors.Is(err, runqueue.ErrStopped) {
		t.Fatalf("enqueue after Run returned: %v, want ErrStopped", err)
	}
	waitFor(t, "the queue's goroutines to end", func() bool { return runtime.NumGoroutine() <= baseline })
}

// waitFor polls cond until it holds, failing after hangGuard.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(hangGuard)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("waited for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestRunRequestCrossesTheQueue: the in-process queue hands the door the
// request it was given, every field of it (FullRequest sets every field
// of knit.RunRequest there is, one added later too), with the run ID it
// gave the job.
func TestRunRequestCrossesTheQueue(t *testing.T) {
	q := runqueue.New(openKnit(t), runqueue.Config{Logger: quiet})
	req := queuetest.FullRequest(t)
	id, err := q.Enqueue(req, "shop/app")
	if err != nil {
		t.Fatal(err)
	}
	j, ok := q.Job(id)
	if !ok {
		t.Fatalf("job %s is not queued", id)
	}
	want := req
	want.RunID = id
	if !reflect.DeepEqual(j.Req, want) {
		t.Errorf("request in the queue:\n%+v\nwant\n%+v", j.Req, want)
	}
}
