package drift

import (
	"context"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"knit.dev/knit/internal/adapters"
	"knit.dev/knit/internal/controller/clock"
	"knit.dev/knit/internal/engine"
	"knit.dev/knit/internal/knit"
	"knit.dev/knit/internal/runner"
	"knit.dev/knit/internal/runner/fake"
	"knit.dev/knit/internal/spec"
	"knit.dev/knit/internal/store"
)

const hangGuard = 15 * time.Second

// scheduled drifts every hour; its component "cache" has a schedule of
// its own, every ten minutes.
const scheduled = `
apiVersion: knit.dev/v1
kind: Environment
metadata: {name: one}
spec:
  teamName: pay
  envName: one
  autoApprove: true
  drift: {schedule: "@every 1h"}
  components:
    - name: db
      type: script
      script: {apply: "true"}
    - name: cache
      type: script
      script: {apply: "true"}
      drift: {schedule: "@every 10m"}
`

// queue records the checks the scheduler queues.
type queue struct {
	mu      sync.Mutex
	reqs    []knit.RunRequest
	queued  chan knit.RunRequest
	pending bool
}

func (q *queue) Enqueue(req knit.RunRequest, env string) (string, error) {
	q.mu.Lock()
	q.reqs = append(q.reqs, req)
	q.mu.Unlock()
	if q.queued != nil {
		q.queued <- req
	}
	return "run", nil
}

func (q *queue) PendingFor(string) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.pending
}

func (q *queue) take() []knit.RunRequest {
	q.mu.Lock()
	defer q.mu.Unlock()
	r := q.reqs
	q.reqs = nil
	return r
}

func applied(t *testing.T) *knit.Knit {
	t.Helper()
	ctx := context.Background()
	k, err := adapters.Open(ctx, adapters.Config{Config: knit.Config{DataDir: t.TempDir(), Runners: map[string]runner.Runner{spec.TypeScript: &fake.Runner{}}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { k.Close() })
	env, diags := spec.Parse("one.yaml", t.TempDir(), []byte(scheduled))
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	if res, err := knit.NewRun(k, knit.RunRequest{Kind: engine.KindApply, Env: env, Actor: "t"}).Run(ctx); err != nil || res.Status != store.StatusSucceeded {
		t.Fatalf("apply: %v %v", res, err)
	}
	return k
}

// TestChecksFallDueOnTheirSchedules: on an injected clock, a check is not
// due before its time, is queued once when it is (whatever its jitter,
// at most a tenth of its period), once only however often the scheduler
// looks, and again a period later; a component with its own schedule is
// checked alone, on its own; a run already waiting skips the check.
func TestChecksFallDueOnTheirSchedules(t *testing.T) {
	k := applied(t)
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	fc := clock.NewFake(t0)
	q := &queue{}
	s := New(k, q, Config{Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Clock: fc})
	s.Refresh(context.Background(), "pay/one")

	s.runDue(t0.Add(9 * time.Minute))
	if got := q.take(); len(got) != 0 {
		t.Fatalf("queued before anything is due: %+v", got)
	}
	s.runDue(t0.Add(11 * time.Minute)) // cache: 10m + jitter ≤ 1m
	got := q.take()
	if len(got) != 1 || len(got[0].Components) != 1 || got[0].Components[0] != "cache" || got[0].Kind != engine.KindDrift ||
		got[0].Source != "schedule" || got[0].Actor != "knit-serve" {
		t.Fatalf("at 11m: %+v, want one drift check of cache", got)
	}
	s.runDue(t0.Add(11 * time.Minute))
	if got := q.take(); len(got) != 0 {
		t.Fatalf("queued twice for one due time: %+v", got)
	}
	s.runDue(t0.Add(67 * time.Minute)) // the environment's: 1h + jitter ≤ 6m; cache's missed ticks run once
	got = q.take()
	if len(got) != 2 {
		t.Fatalf("at 67m: %+v, want the environment's check and cache's", got)
	}
	for _, r := range got {
		if r.EnvRef != "pay/one" {
			t.Fatalf("check of %s", r.EnvRef)
		}
	}
	q.pending = true
	s.runDue(t0.Add(3 * time.Hour))
	if got := q.take(); len(got) != 0 {
		t.Fatalf("queued although a run of it waits: %+v", got)
	}
}

// TestRunQueuesOnTheClock: Run loads every environment's schedule at
// start and queues a check once the injected clock passes its due time.
func TestRunQueuesOnTheClock(t *testing.T) {
	k := applied(t)
	fc := clock.NewFake(time.Now())
	q := &queue{queued: make(chan knit.RunRequest, 10)}
	s := New(k, q, Config{Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Clock: fc, Tick: time.Minute})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	changed := fc.Changed()
	go func() { done <- s.Run(ctx) }()
	select { // Run has loaded the schedules and made its ticker
	case <-changed:
	case <-time.After(hangGuard):
		t.Fatal("Run made no ticker")
	}
	fc.Advance(12 * time.Minute)
	select {
	case r := <-q.queued:
		if r.EnvRef != "pay/one" || r.Kind != engine.KindDrift {
			t.Fatalf("queued %+v", r)
		}
	case <-time.After(hangGuard):
		t.Fatal("no check queued after its due time")
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}
