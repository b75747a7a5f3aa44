package engine

import (
	"context"
	"fmt"
	"sync"
	"time"

	"knit.dev/knit/internal/progress"
)

// A run's events and its components' statuses are defined in
// internal/progress, a leaf the HTTP client decodes them with; the engine
// names them by alias.
type (
	EventKind  = progress.EventKind
	Event      = progress.Event
	PlanCounts = progress.PlanCounts
)

// Event kinds.
const (
	RunStarted      = progress.RunStarted
	RunFinished     = progress.RunFinished
	ComponentStatus = progress.ComponentStatus
	LogLine         = progress.LogLine
	Dropped         = progress.Dropped
	// Verifying: an apply's components are applied and its health checks
	// run; HealthChecked is one check's verdict (Component, Code: verdict
	// and check, Reason: what it saw; Cause when not Successful).
	Verifying     = progress.Verifying
	HealthChecked = progress.HealthChecked
)

// Retention bounds what a run keeps in memory for late subscribers: the
// newest events, at most Events of them and at most Bytes of their text
// (each event also counts a fixed overhead). The oldest go first; a reader
// that still needed them gets a Dropped marker and goes on from the oldest
// kept. The run's stored record keeps the whole story.
type Retention struct {
	Events int
	Bytes  int
}

// Default retention: a run's events fit in a few MiB whatever its tools print.
const (
	defaultRetentionEvents = 10000
	defaultRetentionBytes  = 4 << 20
	// eventOverhead is what an event costs beyond its text: its fields.
	eventOverhead = 256
)

// eventSize is what an event counts against Retention.Bytes.
func eventSize(ev *Event) int {
	return eventOverhead + len(ev.Line) + len(ev.Reason) + len(ev.Error) + len(ev.Code)
}

// eventLog is one run's events: appended by the run without ever blocking,
// read by any number of subscribers, each at its own pace. It is a ring:
// appending costs O(1) whatever the retention, and memory stays within it.
type eventLog struct {
	mu     sync.Mutex
	ring   []Event // grows up to keep.Events, then wraps
	head   int     // index in ring of the oldest kept event
	n      int     // events kept
	bytes  int     // their eventSize total
	first  int64   // Seq of the oldest kept event
	next   int64   // Seq the next event gets
	keep   Retention
	closed bool
	wake   chan struct{} // closed and replaced on every append
	// env and runID name the run, for Dropped markers.
	env, runID string
}

func newEventLog(keep Retention) *eventLog {
	if keep.Events <= 0 {
		keep.Events = defaultRetentionEvents
	}
	if keep.Bytes <= 0 {
		keep.Bytes = defaultRetentionBytes
	}
	return &eventLog{first: 1, next: 1, keep: keep, wake: make(chan struct{})}
}

// publish appends ev, numbering it, and wakes the readers. It never blocks
// on a reader: the oldest events are forgotten beyond the retention.
func (l *eventLog) publish(ev Event) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return
	}
	ev.Seq = l.next
	l.next++
	l.env, l.runID = ev.Env, ev.RunID
	size := eventSize(&ev)
	// Forget the oldest until ev fits; ev itself is always kept.
	for l.n > 0 && (l.n >= l.keep.Events || l.bytes+size > l.keep.Bytes) {
		l.dropOldest()
	}
	if l.n == len(l.ring) {
		l.grow()
	}
	l.ring[(l.head+l.n)%len(l.ring)] = ev
	l.n++
	l.bytes += size
	if ev.Kind == RunFinished {
		l.closed = true
		l.shrink()
	}
	close(l.wake)
	l.wake = make(chan struct{})
}

// dropOldest forgets the oldest kept event.
func (l *eventLog) dropOldest() {
	l.bytes -= eventSize(&l.ring[l.head])
	l.ring[l.head] = Event{} // let its strings go
	l.head = (l.head + 1) % len(l.ring)
	l.n--
	l.first++
}

// finishedRetention is what a finished run keeps in memory: the engine
// keeps its newest finished runs findable (maxFinishedRuns), and a long
// log is in the store, so each keeps only its last events.
var finishedRetention = Retention{Events: 1000, Bytes: 512 << 10}

// shrink trims a finished run's events to finishedRetention, RunFinished
// always kept, into a ring of their size.
func (l *eventLog) shrink() {
	keep := Retention{Events: min(l.keep.Events, finishedRetention.Events), Bytes: min(l.keep.Bytes, finishedRetention.Bytes)}
	for l.n > 1 && (l.n > keep.Events || l.bytes > keep.Bytes) {
		l.dropOldest()
	}
	ring := make([]Event, l.n)
	for i := range l.n {
		ring[i] = l.ring[(l.head+i)%len(l.ring)]
	}
	l.ring, l.head = ring, 0
}

// grow doubles the ring (up to the retention's count), oldest first: each
// event is copied O(1) times on average.
func (l *eventLog) grow() {
	size := min(max(2*len(l.ring), 64), l.keep.Events)
	ring := make([]Event, size)
	for i := range l.n {
		ring[i] = l.ring[(l.head+i)%len(l.ring)]
	}
	l.ring, l.head = ring, 0
}

// at returns the kept event numbered seq (first <= seq < next).
func (l *eventLog) at(seq int64) Event {
	return l.ring[(l.head+int(seq-l.first))%len(l.ring)]
}

// Subscription reads one run's events in order, from a point the reader
// chose. It holds only a cursor: a reader that stops reading costs the run
// nothing. A reader the ring has left behind gets a Dropped marker saying
// how many events it missed, then goes on from the oldest kept one.
type Subscription struct {
	log    *eventLog
	cursor int64 // Seq of the next event to return
	done   bool
}

// subscribe starts a reader at the first event after seq (0: from the start).
func (l *eventLog) subscribe(after int64) *Subscription {
	return &Subscription{log: l, cursor: after + 1}
}

// Next returns the next event, waiting for it. ok is false once the run's
// RunFinished event has been returned, or when ctx ends. When events the
// reader had not read were forgotten, Next first returns a Dropped event
// whose Missed counts them and whose Seq is the last of them (a reader
// resuming after it misses nothing more).
func (s *Subscription) Next(ctx context.Context) (ev Event, ok bool) {
	for {
		if s.done {
			return Event{}, false
		}
		l := s.log
		l.mu.Lock()
		switch {
		case s.cursor < l.first:
			missed := l.first - s.cursor
			ev = Event{Seq: l.first - 1, Kind: Dropped, Time: time.Now(), Env: l.env, RunID: l.runID, Missed: missed,
				Reason: fmt.Sprintf("%d events fell out of the live buffer before this reader got them; the run's record keeps its log", missed)}
			s.cursor = l.first
			l.mu.Unlock()
			return ev, true
		case s.cursor < l.next:
			ev = l.at(s.cursor)
			s.cursor++
			s.done = ev.Kind == RunFinished
			l.mu.Unlock()
			return ev, true
		}
		wake := l.wake
		l.mu.Unlock()
		select {
		case <-wake:
		case <-ctx.Done():
			return Event{}, false
		}
	}
}

// Channel delivers the subscription's events on a channel until the run
// finishes or ctx ends, then closes it.
func (s *Subscription) Channel(ctx context.Context) <-chan Event {
	ch := make(chan Event, 64)
	go func() {
		defer close(ch)
		for {
			ev, ok := s.Next(ctx)
			if !ok {
				return
			}
			select {
			case ch <- ev:
			case <-ctx.Done():
				return
			}
		}
	}()
	return ch
}
