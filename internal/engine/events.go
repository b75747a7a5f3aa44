package engine

import (
	"context"
	"sync"
	"time"
)

// EventKind says what an Event reports.
type EventKind string

// Event kinds.
const (
	// RunStarted is always a run's first event, RunFinished its last.
	RunStarted  EventKind = "run-started"
	RunFinished EventKind = "run-finished"
	// ComponentStatus is a component moving to a new status.
	ComponentStatus EventKind = "component"
	// LogLine is one line of a tool's output, secrets masked.
	LogLine EventKind = "log"
	// Dropped tells a subscriber it fell too far behind and was cut off.
	Dropped EventKind = "dropped"
)

// PlanCounts is the size of a component's plan.
type PlanCounts struct {
	Add     int `json:"add"`
	Change  int `json:"change"`
	Destroy int `json:"destroy"`
}

// Event is one thing that happened in a run, for progress displays,
// server-sent events and notifications. Seq numbers a run's events from 1
// without gaps, so a reader can resume after the last one it saw.
type Event struct {
	Seq   int64     `json:"seq"`
	Kind  EventKind `json:"kind"`
	Time  time.Time `json:"time"`
	Env   string    `json:"env"`
	RunID string    `json:"runId"`
	// RunKind is the run's kind (plan, apply, drift, teardown).
	RunKind   string `json:"runKind,omitempty"`
	Component string `json:"component,omitempty"`
	Status    Status `json:"status,omitempty"`
	// Code is the machine-readable reason, e.g.
	// "waiting: upstream db awaiting approval"; Reason says it for people.
	Code    string        `json:"code,omitempty"`
	Reason  string        `json:"reason,omitempty"`
	Plan    *PlanCounts   `json:"plan,omitempty"`
	Elapsed time.Duration `json:"elapsedNs,omitempty"`
	// Line is a LogLine's text (masked).
	Line string `json:"line,omitempty"`
	// RunStatus and Error close the run (RunFinished).
	RunStatus string `json:"runStatus,omitempty"`
	Error     string `json:"error,omitempty"`
}

// defaultRetention is how many events a run keeps in memory for late
// subscribers; a subscriber further behind than that is dropped.
const defaultRetention = 20000

// eventLog is one run's events: appended by the run without ever blocking,
// read by any number of subscribers, each at its own pace.
type eventLog struct {
	mu     sync.Mutex
	events []Event // events[i].Seq == first+i
	first  int64   // Seq of events[0]
	next   int64   // Seq the next event gets
	keep   int
	closed bool
	wake   chan struct{} // closed and replaced on every append
}

func newEventLog(keep int) *eventLog {
	if keep <= 0 {
		keep = defaultRetention
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
	l.events = append(l.events, ev)
	if over := len(l.events) - l.keep; over > 0 {
		// Keep the slice from growing without bound while dropping the head.
		l.events = append(l.events[:0:0], l.events[over:]...)
		l.first += int64(over)
	}
	if ev.Kind == RunFinished {
		l.closed = true
	}
	close(l.wake)
	l.wake = make(chan struct{})
}

// Subscription reads one run's events in order, from a point the reader
// chose. It holds only a cursor: a reader that stops reading costs the run
// nothing, and is dropped once the events it still needs are forgotten.
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
// RunFinished event (or a Dropped notice) has been returned, or when ctx ends.
func (s *Subscription) Next(ctx context.Context) (ev Event, ok bool) {
	for {
		if s.done {
			return Event{}, false
		}
		s.log.mu.Lock()
		switch {
		case s.cursor < s.log.first:
			ev = Event{Seq: s.cursor, Kind: Dropped, Time: time.Now(),
				Reason: "this reader fell too far behind; the events it missed are in the run's record"}
			if len(s.log.events) > 0 {
				ev.Env, ev.RunID = s.log.events[0].Env, s.log.events[0].RunID
			}
			s.done = true
			s.log.mu.Unlock()
			return ev, true
		case s.cursor < s.log.next:
			ev = s.log.events[s.cursor-s.log.first]
			s.cursor++
			s.done = ev.Kind == RunFinished
			s.log.mu.Unlock()
			return ev, true
		}
		wake := s.log.wake
		s.log.mu.Unlock()
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
