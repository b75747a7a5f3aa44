package cli

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"knit.dev/knit/internal/engine"
)

// The live table counts finished components out of the run's, and its
// timers leave out the time a person spent answering a question.
func TestLiveTableCountsAndItsTimersSkipTheQuestion(t *testing.T) {
	var out bytes.Buffer
	clock := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	p := &progress{w: &out, live: true, now: func() time.Time { return clock }, rows: map[string]progressRow{}}
	p.start = clock
	p.Expect(3)
	ev := func(name string, st engine.Status, elapsed time.Duration) {
		p.Event(engine.Event{Kind: engine.ComponentStatus, Time: clock, Component: name, Status: st, Elapsed: elapsed})
	}
	ev("db", engine.Planning, 0)
	ev("net", engine.Applying, 0)
	clock = clock.Add(2 * time.Second)
	ev("net", engine.Applied, 2*time.Second)
	p.Pause() // "Apply db? Only 'yes' is accepted:"
	clock = clock.Add(10 * time.Minute)
	p.Resume()
	clock = clock.Add(time.Second)
	p.draw()
	table := out.String()
	for _, want := range []string{
		"  1/3 components done     3.0s\n",
		"  db                       planning              3.0s",
		"  net                      applied               2.0s",
	} {
		if !strings.Contains(table, want) {
			t.Errorf("live table lacks %q:\n%s", want, table)
		}
	}
	// db's apply, reported by the engine with the question's time in it.
	ev("db", engine.Applied, 3*time.Second+10*time.Minute)
	out.Reset()
	p.draw()
	if table := out.String(); !strings.Contains(table, "2/3 components done") || !strings.Contains(table, "  db                       applied               3.0s") {
		t.Errorf("after db applied:\n%s", table)
	}
}
