package health

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
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
	"knit.dev/knit/internal/view"
)

const hangGuard = 30 * time.Second

type checked struct {
	env string
	h   view.Health
	err error
}

// TestScheduledHealthChecks: on an injected clock, the scheduler checks
// an environment's health when its spec.health.schedule falls due (not
// before), keeps the outcome as the environment's last health check, and
// checks again a period later; an environment without a schedule is
// never checked.
func TestScheduledHealthChecks(t *testing.T) {
	var status, hits atomic.Int32
	status.Store(http.StatusOK)
	probe := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		hits.Add(1)
		w.WriteHeader(int(status.Load()))
	}))
	t.Cleanup(probe.Close)
	ctx := context.Background()
	k, err := adapters.Open(ctx, adapters.Config{Config: knit.Config{DataDir: t.TempDir(), Runners: map[string]runner.Runner{spec.TypeScript: &fake.Runner{}}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { k.Close() })
	for _, env := range []struct{ name, schedule string }{{"one", `schedule: "@every 1h", `}, {"two", ""}} {
		doc := `apiVersion: knit.dev/v1
kind: Environment
spec:
  teamName: pay
  envName: ` + env.name + `
  autoApprove: true
  components:
    - name: db
      type: script
      script: {apply: "true"}
  health: {` + env.schedule + `checks: [{name: web, http: {url: "` + probe.URL + `"}}]}
`
		e, diags := spec.Parse(env.name+".yaml", t.TempDir(), []byte(doc))
		if diags.HasErrors() {
			t.Fatal(diags)
		}
		if res, err := knit.NewRun(k, knit.RunRequest{Kind: engine.KindApply, Env: e, Actor: "t"}).Run(ctx); err != nil || res.Status != store.StatusSucceeded {
			t.Fatalf("apply %s: %+v %v", env.name, res, err)
		}
	}
	if hits.Load() != 2 {
		t.Fatalf("verifications after the applies: %d requests, want 2", hits.Load())
	}

	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	fc := clock.NewFake(t0)
	events := make(chan checked, 10)
	s := New(k, Config{Tick: 10 * time.Minute, Clock: fc, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		Checked: func(env string, h view.Health, err error) { events <- checked{env, h, err} }})
	// Due times, judged directly: nothing before 1h, once at 1h however
	// often asked, again at 2h.
	s.Refresh(ctx, "pay/one")
	s.Refresh(ctx, "pay/two")
	s.runDue(ctx, t0.Add(59*time.Minute))
	s.runDue(ctx, t0.Add(time.Hour))
	s.runDue(ctx, t0.Add(time.Hour+time.Minute))
	if c := next(t, events); c.env != "pay/one" || c.h.Verdict != "Successful" || hits.Load() != 3 {
		t.Fatalf("at 1h: %+v, %d requests", c, hits.Load())
	}
	select {
	case c := <-events:
		t.Fatalf("an extra check: %+v", c)
	default:
	}
	s.runDue(ctx, t0.Add(2*time.Hour))
	if c := next(t, events); c.env != "pay/one" || hits.Load() != 4 {
		t.Fatalf("at 2h: %+v, %d requests", c, hits.Load())
	}
	hits.Store(2)
	s = New(k, Config{Tick: 10 * time.Minute, Clock: fc, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		Checked: func(env string, h view.Health, err error) { events <- checked{env, h, err} }})

	// On the clock: Run loads the schedules and checks as they fall due.
	runCtx, stop := context.WithCancel(ctx)
	stopped := make(chan struct{})
	go func() { defer close(stopped); _ = s.Run(runCtx) }()
	t.Cleanup(func() { stop(); <-stopped })
	waitTicker(t, fc)

	status.Store(http.StatusServiceUnavailable)
	fc.Advance(50 * time.Minute) // ticks at 10m … 50m: nothing due
	fc.Advance(10 * time.Minute) // 1h: pay/one is due
	c := next(t, events)
	if c.env != "pay/one" || c.err != nil || c.h.Verdict != "Failed" || c.h.RunID != "" || len(c.h.Checks) != 1 || c.h.Checks[0].Evidence != "status 503" {
		t.Fatalf("first scheduled check: %+v", c)
	}
	if hits.Load() != 3 {
		t.Fatalf("%d requests after the first scheduled check, want 3 (one per apply, one scheduled)", hits.Load())
	}
	v, err := knit.NewRecords(k).Environment(ctx, "pay/one")
	if err != nil || v.Health == nil || v.Health.Verdict != "Failed" || !v.Health.CheckedAt.Equal(c.h.CheckedAt) {
		t.Fatalf("the view's health: %+v %v", v.Health, err)
	}

	status.Store(http.StatusOK)
	fc.Advance(time.Hour) // ticks every 10m; due again at 2h only
	c = next(t, events)
	if c.env != "pay/one" || c.h.Verdict != "Successful" || hits.Load() != 4 {
		t.Fatalf("second scheduled check: %+v, %d requests", c, hits.Load())
	}
	select {
	case c := <-events:
		t.Fatalf("an extra check: %+v", c)
	default:
	}
	if v, err := knit.NewRecords(k).Environment(ctx, "pay/two"); err != nil || v.Health == nil || v.Health.RunID == "" {
		t.Fatalf("pay/two's last health check should be its apply's: %+v %v", v.Health, err)
	}
}

// waitTicker waits until Run has made its ticker.
func waitTicker(t *testing.T, fc *clock.Fake) {
	t.Helper()
	deadline := time.After(hangGuard)
	for {
		ch := fc.Changed()
		if fc.Pending() > 0 {
			return
		}
		select {
		case <-ch:
		case <-deadline:
			t.Fatal("hang guard: the scheduler never made its ticker")
		}
	}
}

func next(t *testing.T, events <-chan checked) checked {
	t.Helper()
	select {
	case c := <-events:
		return c
	case <-time.After(hangGuard):
		t.Fatal("hang guard: no scheduled check")
	}
	return checked{}
}
