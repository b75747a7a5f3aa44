package engine

import (
	"context"
	"runtime"
	"strings"
	"testing"
)

func TestASlowReaderGetsADroppedMarkerWithTheCountThenGoesOn(t *testing.T) {
	l := newEventLog(Retention{Events: 100})
	slow := l.subscribe(0)
	for range 250 {
		l.publish(Event{Kind: LogLine, Line: "x"})
	}
	ctx := context.Background()
	ev, ok := slow.Next(ctx)
	if !ok || ev.Kind != Dropped || ev.Missed != 150 || ev.Seq != 150 {
		t.Fatalf("first event %+v, want a dropped marker for 150 events", ev)
	}
	for want := int64(151); want <= 250; want++ {
		if ev, ok := slow.Next(ctx); !ok || ev.Seq != want || ev.Kind != LogLine {
			t.Fatalf("after the marker: %+v, want seq %d", ev, want)
		}
	}
	// Live again: the next event comes as it is published.
	l.publish(Event{Kind: RunFinished})
	if ev, ok := slow.Next(ctx); !ok || ev.Kind != RunFinished || ev.Seq != 251 {
		t.Fatalf("last %+v", ev)
	}
	if _, ok := slow.Next(ctx); ok {
		t.Fatal("an event after the run finished")
	}
}

func TestRetentionByBytesForgetsTheOldestBigEvents(t *testing.T) {
	l := newEventLog(Retention{Events: 1000, Bytes: 10 * (eventOverhead + 1000)})
	for range 100 {
		l.publish(Event{Kind: LogLine, Line: strings.Repeat("y", 1000)})
	}
	if l.n != 10 || l.first != 91 || l.bytes > l.keep.Bytes {
		t.Fatalf("kept %d events from %d in %d bytes", l.n, l.first, l.bytes)
	}
	ev, _ := l.subscribe(0).Next(context.Background())
	if ev.Kind != Dropped || ev.Missed != 90 {
		t.Fatalf("%+v", ev)
	}
}

// TestAppendingCostsTheSameAtAnyLength publishes far beyond the retention
// and measures what appending allocates: a log that shifts or copies its
// kept events per append allocates (and copies) the retention each time,
// which made a 300,000-line tool output take minutes.
func TestAppendingCostsTheSameAtAnyLength(t *testing.T) {
	l := newEventLog(Retention{Events: 1000})
	const n = 20000
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for range n {
		l.publish(Event{Kind: LogLine, Line: "a line of output"})
	}
	runtime.ReadMemStats(&after)
	// A wake channel per append, and the ring once: far below 1 KiB an append.
	if per := (after.TotalAlloc - before.TotalAlloc) / n; per > 1024 {
		t.Fatalf("%d bytes allocated per append", per)
	}
	if l.n != 1000 || len(l.ring) != 1000 || l.first != n-999 {
		t.Fatalf("kept %d events from %d in a ring of %d", l.n, l.first, len(l.ring))
	}
}

func BenchmarkPublish(b *testing.B) {
	l := newEventLog(Retention{})
	ev := Event{Kind: LogLine, Line: "a line of output"}
	b.ReportAllocs()
	for b.Loop() {
		l.publish(ev)
	}
}

// TestAFinishedRunKeepsOnlyItsLastEvents: the engine keeps recent finished
// runs findable; each keeps only its last events (its log is in the
// store), so a server's memory does not grow with the floods of the past.
func TestAFinishedRunKeepsOnlyItsLastEvents(t *testing.T) {
	l := newEventLog(Retention{})
	for range 5000 {
		l.publish(Event{Kind: LogLine, Line: "x"})
	}
	l.publish(Event{Kind: RunFinished, Error: strings.Repeat("e", 1<<20)})
	if l.n != 1 || len(l.ring) != 1 || l.at(l.first).Kind != RunFinished {
		t.Fatalf("kept %d events in a ring of %d", l.n, len(l.ring))
	}
	l = newEventLog(Retention{})
	for range 5000 {
		l.publish(Event{Kind: LogLine, Line: "x"})
	}
	l.publish(Event{Kind: RunFinished})
	sub := l.subscribe(0)
	ev, _ := sub.Next(context.Background())
	if ev.Kind != Dropped || ev.Missed != 5001-int64(finishedRetention.Events) || len(l.ring) != finishedRetention.Events {
		t.Fatalf("%+v, ring of %d", ev, len(l.ring))
	}
}
