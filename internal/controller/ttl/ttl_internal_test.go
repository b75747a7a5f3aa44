package ttl

import (
	"context"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"knit.dev/knit/internal/controller/clock"
	"knit.dev/knit/internal/engine"
	"knit.dev/knit/internal/knit"
	"knit.dev/knit/internal/notify"
	"knit.dev/knit/internal/runner"
	"knit.dev/knit/internal/runner/fake"
	"knit.dev/knit/internal/spec"
	"knit.dev/knit/internal/store"
	"knit.dev/knit/internal/store/sqlite"
	"knit.dev/knit/internal/view"
)

const hangGuard = 15 * time.Second

const ephemeral = `
apiVersion: knit.dev/v1
kind: Environment
metadata: {name: pr-1}
spec:
  teamName: shop
  envName: pr-1
  autoApprove: true
  ttl: 2h
  components:
    - name: app
      type: script
      script: {apply: "true"}
`

// queue records the teardowns the controller queues.
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
	return "run-1", nil
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

// sink records the notifications.
type sink struct {
	mu  sync.Mutex
	evs []notify.Event
}

func (s *sink) Notify(ev notify.Event) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.evs = append(s.evs, ev)
}

func (s *sink) take() []notify.Event {
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.evs
	s.evs = nil
	return e
}

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// applied is a knit on fc whose shop/pr-1 (ttl 2h) was applied at t0.
func applied(t *testing.T, fc *clock.Fake) *knit.Knit {
	t.Helper()
	ctx := context.Background()
	dir := t.TempDir()
	st, err := sqlite.Open(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	k, err := knit.Open(ctx, knit.Config{DataDir: dir, Store: st, CloseStore: true, Now: fc.Now,
		Runners: map[string]runner.Runner{spec.TypeScript: &fake.Runner{}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { k.Close() })
	env, diags := spec.Parse("pr-1.yaml", t.TempDir(), []byte(ephemeral))
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	if res, err := knit.NewRun(k, knit.RunRequest{Kind: engine.KindApply, Env: env, Actor: "t"}).Run(ctx); err != nil || res.Status != store.StatusSucceeded {
		t.Fatalf("apply: %v %v", res, err)
	}
	return k
}

func quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// TestExpiry: the first apply starts the expiry; ttl.expiring goes out
// once within the lead time, and not again after a restart; an extension
// moves the expiry (audited) and warns again before the new one; the
// teardown is queued once at expiry, with its reason, and audited.
func TestExpiry(t *testing.T) {
	ctx := context.Background()
	fc := clock.NewFake(t0)
	k := applied(t, fc)
	x, err := knit.NewRecords(k).Expiry(ctx, "shop/pr-1")
	if err != nil || !x.At.Equal(t0.Add(2*time.Hour)) {
		t.Fatalf("expiry = %+v, %v; want t0+2h", x, err)
	}
	q, n := &queue{}, &sink{}
	cfg := Config{WarnBefore: time.Hour, Logger: quiet(), Clock: fc}
	c := New(k, q, n, cfg)

	fc.Advance(59 * time.Minute)
	c.Check(ctx)
	if evs := n.take(); len(evs) != 0 {
		t.Fatalf("warned before the lead time: %+v", evs)
	}
	fc.Advance(2 * time.Minute) // t0+61m: within an hour of expiry
	c.Check(ctx)
	c.Check(ctx)
	evs := n.take()
	if len(evs) != 1 || evs[0].Kind != notify.KindTTLExpiring || evs[0].Env != "shop/pr-1" {
		t.Fatalf("within the lead time: %+v, want one ttl.expiring", evs)
	}

	restarted := New(k, q, n, cfg) // a restart: a new controller over the same store
	fc.Advance(10 * time.Minute)
	restarted.Check(ctx)
	if evs := n.take(); len(evs) != 0 {
		t.Fatalf("warned again after a restart: %+v", evs)
	}

	got, err := knit.NewExtendTTL(k, "shop/pr-1", 24*time.Hour, "alice").Run(ctx)
	want := t0.Add(26 * time.Hour)
	if err != nil || !got.At.Equal(want) {
		t.Fatalf("extend: %+v, %v; want expiry at t0+26h", got, err)
	}
	fc.Advance(2 * time.Hour) // t0+3h11m: past the old expiry
	restarted.Check(ctx)
	if r, e := q.take(), n.take(); len(r) != 0 || len(e) != 0 {
		t.Fatalf("after the extension, at the old expiry: queued %+v, told %+v", r, e)
	}
	fc.Advance(want.Add(-30 * time.Minute).Sub(fc.Now()))
	restarted.Check(ctx)
	if evs := n.take(); len(evs) != 1 || evs[0].Kind != notify.KindTTLExpiring {
		t.Fatalf("before the new expiry: %+v, want one ttl.expiring", evs)
	}

	q.pending = true // a run of it waits: the teardown waits its turn
	fc.Advance(30 * time.Minute)
	restarted.Check(ctx)
	if r := q.take(); len(r) != 0 {
		t.Fatalf("queued beside a waiting run: %+v", r)
	}
	q.pending = false
	restarted.Check(ctx)
	restarted.Check(ctx)
	reqs := q.take()
	if len(reqs) != 1 || reqs[0].Kind != engine.KindTeardown || reqs[0].EnvRef != "shop/pr-1" || reqs[0].Source != "ttl" ||
		reqs[0].Reason != "ttl expired at 2026-01-02T02:00:00Z" || reqs[0].AutoApprove {
		t.Fatalf("at expiry: %+v, want one gated teardown with its reason", reqs)
	}

	page, err := knit.NewRecords(k).Audit(ctx, knit.AuditFilter{Env: "shop/pr-1"})
	if err != nil {
		t.Fatal(err)
	}
	var ext, exp *view.AuditEvent
	for i, e := range page.Items {
		switch e.Action {
		case knit.AuditTTLExtend:
			ext = &page.Items[i]
		case knit.AuditTTLExpire:
			exp = &page.Items[i]
		}
	}
	if ext == nil || ext.Actor != "alice" || ext.Detail != "extended by 24h0m0s: expires at 2026-01-02T02:00:00Z (was 2026-01-01T02:00:00Z)" {
		t.Fatalf("audit of the extension: %+v", ext)
	}
	if exp == nil || exp.Reason != "ttl expired at 2026-01-02T02:00:00Z" || exp.RunID != "run-1" {
		t.Fatalf("audit of the expiry: %+v", exp)
	}
}

// TestTeardownClearsAndReapplyRestarts: a teardown clears the expiry
// (followed by RunEnded, as the server's queue tells it); the next apply
// starts a new one from its own time.
func TestTeardownClearsAndReapplyRestarts(t *testing.T) {
	ctx := context.Background()
	fc := clock.NewFake(t0)
	k := applied(t, fc)
	fc.Advance(3 * time.Hour)
	// As the server's queue runs it (Start, not Run): RunEnded follows.
	r, err := knit.NewRun(k, knit.RunRequest{Kind: engine.KindTeardown, EnvRef: "shop/pr-1", AutoApprove: true, Actor: "t"}).Start(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if res, err := r.Wait(ctx); err != nil || res.Status != store.StatusSucceeded {
		t.Fatalf("teardown: %v %v", res, err)
	}
	New(k, &queue{}, &sink{}, Config{Logger: quiet(), Clock: fc}).RunEnded("shop/pr-1")
	if x, err := knit.NewRecords(k).Expiry(ctx, "shop/pr-1"); err == nil {
		t.Fatalf("expiry after teardown: %+v", x)
	}
	if _, err := knit.NewExtendTTL(k, "shop/pr-1", time.Hour, "alice").Run(ctx); err == nil {
		t.Fatal("extended a torn-down environment")
	}
	env, _ := spec.Parse("pr-1.yaml", t.TempDir(), []byte(ephemeral))
	if res, err := knit.NewRun(k, knit.RunRequest{Kind: engine.KindApply, Env: env, Actor: "t"}).Run(ctx); err != nil || res.Status != store.StatusSucceeded {
		t.Fatalf("apply: %v %v", res, err)
	}
	if x, err := knit.NewRecords(k).Expiry(ctx, "shop/pr-1"); err != nil || !x.At.Equal(t0.Add(5*time.Hour)) {
		t.Fatalf("expiry after a new apply: %+v, %v; want t0+5h", x, err)
	}
}

// TestRunTearsDownOnTheClock: Run queues the teardown once the injected
// clock passes the expiry.
func TestRunTearsDownOnTheClock(t *testing.T) {
	fc := clock.NewFake(t0)
	k := applied(t, fc)
	q := &queue{queued: make(chan knit.RunRequest, 10)}
	c := New(k, q, &sink{}, Config{Logger: quiet(), Clock: fc, Tick: time.Minute})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	changed := fc.Changed()
	go func() { done <- c.Run(ctx) }()
	select {
	case <-changed:
	case <-time.After(hangGuard):
		t.Fatal("Run made no ticker")
	}
	fc.Advance(2*time.Hour + time.Minute)
	select {
	case r := <-q.queued:
		if r.EnvRef != "shop/pr-1" || r.Kind != engine.KindTeardown {
			t.Fatalf("queued %+v", r)
		}
	case <-time.After(hangGuard):
		t.Fatal("no teardown queued after the expiry")
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}
