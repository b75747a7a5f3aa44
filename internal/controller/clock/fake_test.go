package clock_test

import (
	"testing"
	"time"

	"knit.dev/knit/internal/controller/clock"
)

// TestFakeFiresInOrderAndStops: Advance fires what falls due, in time
// order; a ticker keeps one tick, as a real one; a stopped timer never
// fires.
func TestFakeFiresInOrderAndStops(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	f := clock.NewFake(t0)
	fired := make(chan string, 3)
	f.AfterFunc(2*time.Second, func() { fired <- "two" })
	stopped := f.AfterFunc(time.Second, func() { fired <- "stopped" })
	tk := f.NewTicker(time.Second)
	if !stopped.Stop() {
		t.Fatal("Stop of a pending timer reported false")
	}
	f.Advance(3 * time.Second)
	if got := <-fired; got != "two" {
		t.Fatalf("fired %q", got)
	}
	select {
	case got := <-fired:
		t.Fatalf("also fired %q", got)
	default:
	}
	if tick := <-tk.C(); !tick.Equal(t0.Add(time.Second)) {
		t.Fatalf("tick at %v: the first missed tick is kept", tick)
	}
	if !f.Now().Equal(t0.Add(3 * time.Second)) {
		t.Fatalf("now %v", f.Now())
	}
	tk.Stop()
	if f.Pending() != 0 {
		t.Fatalf("%d pending after all stopped or fired", f.Pending())
	}
}
