package health

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"
)

// fakeClock never sleeps: After moves time on by d at once and records
// the wait.
type fakeClock struct {
	mu    sync.Mutex
	now   time.Time
	waits []time.Duration
}

func newFakeClock() *fakeClock { return &fakeClock{now: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)} }

func (c *fakeClock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }

func (c *fakeClock) After(d time.Duration) <-chan time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
	c.waits = append(c.waits, d)
	ch := make(chan time.Time, 1)
	ch <- c.now
	return ch
}

// script is a probe answering with the phases of a string, one a call.
type script struct {
	phases []Measurement
	calls  int
}

func (s *script) Measure(ctx context.Context) Measurement {
	if _, ok := ctx.Deadline(); !ok {
		return Measurement{Phase: PhaseError, Message: "no timeout"}
	}
	m := s.phases[s.calls]
	s.calls++
	return m
}

func TestRunMeasuresAtIntervalsUntilDecided(t *testing.T) {
	clock := newFakeClock()
	p := &script{phases: phases("SFSFS")}
	res, err := Run(context.Background(), clock, Check{Name: "c", Probe: p, Interval: 7 * time.Second, Timeout: time.Second,
		Limits: Limits{Count: 5, FailureLimit: 1, ConsecutiveErrorLimit: 4}})
	if err != nil {
		t.Fatal(err)
	}
	if res.Verdict != Failed || res.Reason != ReasonFailureLimit || p.calls != 4 || len(res.Measurements) != 4 {
		t.Fatalf("got %+v after %d calls, want Failed at the 2nd failure (4 calls)", res, p.calls)
	}
	if len(clock.waits) != 3 || clock.waits[0] != 7*time.Second {
		t.Errorf("waits %v, want three of 7s", clock.waits)
	}
	if got := res.Measurements[3].At.Sub(res.Measurements[0].At); got != 21*time.Second {
		t.Errorf("measurements span %v, want 21s", got)
	}
	if res.Message != "failed (2) > failureLimit (1)" {
		t.Errorf("message %q", res.Message)
	}
}

func TestRunStopsWhenCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	res, err := Run(ctx, newFakeClock(), Check{Name: "c", Probe: &script{phases: phases("S")}, Timeout: time.Second, Limits: Limits{Count: 1}})
	if !errors.Is(err, context.Canceled) || res.Verdict != Inconclusive || res.Reason != ReasonCancelled {
		t.Errorf("got %+v, %v", res, err)
	}
}
