package sse_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	"knit.dev/knit/internal/sse"
)

// hangGuard fails a test that waits for something that never comes; it
// bounds a failure, it is not a timing the test depends on.
const hangGuard = 30 * time.Second

// pipe is a ResponseWriter whose every flush is one piece of text on out,
// so a test reads what the stream wrote while Follow runs.
type pipe struct {
	h    http.Header
	mu   sync.Mutex
	buf  bytes.Buffer
	out  chan string
	fail error // set: every write fails with it
}

func newPipe() *pipe { return &pipe{h: http.Header{}, out: make(chan string, 100)} }

func (p *pipe) Header() http.Header { return p.h }
func (p *pipe) WriteHeader(int)     {}
func (p *pipe) Write(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.fail != nil {
		return 0, p.fail
	}
	return p.buf.Write(b)
}
func (p *pipe) Flush() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.buf.Len() > 0 {
		p.out <- p.buf.String()
		p.buf.Reset()
	}
}

// next is the next piece the stream wrote.
func (p *pipe) next(t *testing.T) string {
	t.Helper()
	select {
	case s := <-p.out:
		return s
	case <-time.After(hangGuard):
		t.Fatal("hang guard: the stream wrote nothing")
		return ""
	}
}

// event is a fake run's event: its number, and whether it is the run's last.
type event struct {
	seq  int64
	last bool
}

// events is a fake run's events: what the test sends on ch. ended is
// closed when the stream's reader of them stops (its ctx ended).
type events struct {
	ch    chan event
	ended chan struct{}
}

func newEvents() *events { return &events{ch: make(chan event), ended: make(chan struct{})} }

// channel delivers the test's events until ctx ends, as
// engine.Subscription.Channel does.
func (e *events) channel(ctx context.Context) <-chan event {
	out := make(chan event)
	go func() {
		defer close(e.ended)
		defer close(out)
		for {
			select {
			case ev := <-e.ch:
				select {
				case out <- ev:
				case <-ctx.Done():
					return
				}
			case <-ctx.Done():
				return
			}
		}
	}()
	return out
}

// source is a fake run: queued until start is closed (nil: at once), then
// live on evs, or over with record when evs is nil.
type source struct {
	start  chan struct{}
	evs    *events
	record []sse.Message
	finds  chan struct{} // one token per Find, when set
}

func (s *source) Find(ctx context.Context) sse.Found[event] {
	if s.finds != nil {
		s.finds <- struct{}{}
	}
	if s.start != nil {
		select {
		case <-s.start:
		default:
			return sse.Found[event]{Queued: true}
		}
	}
	if s.evs == nil {
		return sse.Found[event]{Record: s.record}
	}
	return sse.Found[event]{Events: s.evs.channel(ctx)}
}

func (s *source) Encode(ev event) ([]sse.Message, bool) {
	return []sse.Message{{ID: ev.seq, Event: "ev", Data: fmt.Sprint("event ", ev.seq)}}, ev.last
}

// clock hands Follow tickers the test drives: one for keep-alives, one
// for polls.
type clock struct{ idle, poll chan time.Time }

func newClock() *clock { return &clock{idle: make(chan time.Time), poll: make(chan time.Time)} }

func (c *clock) ticker(d time.Duration) (<-chan time.Time, func()) {
	if d == sse.KeepAlive {
		return c.idle, func() {}
	}
	return c.poll, func() {}
}

// follow runs Follow in the background; the returned channel closes when it returns.
func follow(t *testing.T, ctx context.Context, p *pipe, src sse.Source[event], o sse.Options) <-chan struct{} {
	t.Helper()
	st, err := sse.Open(p, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		sse.Follow(ctx, st, src, o)
	}()
	return done
}

func waitDone(t *testing.T, what string, done <-chan struct{}) {
	t.Helper()
	select {
	case <-done:
	case <-time.After(hangGuard):
		t.Fatalf("hang guard: %s", what)
	}
}

// TestFollowStreamsALiveRunToItsEnd: each event as the source encodes it,
// a comment when idle, and the stream ends after the run's last event.
func TestFollowStreamsALiveRunToItsEnd(t *testing.T) {
	p, c, evs := newPipe(), newClock(), newEvents()
	done := follow(t, context.Background(), p, &source{evs: evs}, sse.Options{Ticker: c.ticker})
	evs.ch <- event{seq: 1}
	if got := p.next(t); got != "id: 1\nevent: ev\ndata: event 1\n\n" {
		t.Fatalf("first event: %q", got)
	}
	c.idle <- time.Time{}
	if got := p.next(t); got != ": keep-alive\n\n" {
		t.Fatalf("idle: %q", got)
	}
	evs.ch <- event{seq: 2, last: true}
	if got := p.next(t); got != "id: 2\nevent: ev\ndata: event 2\n\n" {
		t.Fatalf("last event: %q", got)
	}
	waitDone(t, "the stream did not end after the run's last event", done)
}

// TestFollowWaitsForAQueuedRun: a queued run gets "queued" comments on
// keep-alives, is looked for again on each poll, and is followed once it
// starts.
func TestFollowWaitsForAQueuedRun(t *testing.T) {
	p, c, evs := newPipe(), newClock(), newEvents()
	src := &source{start: make(chan struct{}), evs: evs, finds: make(chan struct{}, 10)}
	done := follow(t, context.Background(), p, src, sse.Options{Ticker: c.ticker, Poll: time.Hour})
	<-src.finds
	c.idle <- time.Time{}
	if got := p.next(t); got != ": queued\n\n" {
		t.Fatalf("while queued: %q", got)
	}
	<-src.finds
	c.poll <- time.Time{}
	<-src.finds // a poll looks again
	close(src.start)
	c.poll <- time.Time{}
	<-src.finds
	followedToItsEnd(t, p, evs, done)
}

// TestFollowLooksAgainWhenStarted: Started closing is enough to find the
// run, without a poll or a keep-alive.
func TestFollowLooksAgainWhenStarted(t *testing.T) {
	p, c, evs := newPipe(), newClock(), newEvents()
	src := &source{start: make(chan struct{}), evs: evs, finds: make(chan struct{}, 10)}
	done := follow(t, context.Background(), p, src, sse.Options{Ticker: c.ticker, Started: src.start})
	<-src.finds // queued
	close(src.start)
	<-src.finds
	followedToItsEnd(t, p, evs, done)
}

// followedToItsEnd checks that a started run's stream sends its events:
// its last one, then the end.
func followedToItsEnd(t *testing.T, p *pipe, evs *events, done <-chan struct{}) {
	t.Helper()
	evs.ch <- event{seq: 1, last: true}
	if got := p.next(t); got != "id: 1\nevent: ev\ndata: event 1\n\n" {
		t.Fatalf("after the start: %q", got)
	}
	waitDone(t, "the stream did not end", done)
}

// TestFollowSendsTheRecordOfARunThatIsOver: a run no longer live is its
// record's messages, then the end.
func TestFollowSendsTheRecordOfARunThatIsOver(t *testing.T) {
	p, c := newPipe(), newClock()
	rec := []sse.Message{{ID: 5, Event: "ev", Data: "it failed"}, {Event: "done", Data: "done"}}
	done := follow(t, context.Background(), p, &source{record: rec}, sse.Options{Ticker: c.ticker})
	waitDone(t, "the stream of a finished run did not end", done)
	if got := p.next(t) + p.next(t); got != "id: 5\nevent: ev\ndata: it failed\n\nevent: done\ndata: done\n\n" {
		t.Fatalf("record: %q", got)
	}
}

// TestFollowStopsWhenTheClientGoes: the request's context ending (the
// client gone, or the server closing) ends the stream and its reader of
// the run's events, whether the run is live or still queued.
func TestFollowStopsWhenTheClientGoes(t *testing.T) {
	t.Run("live", func(t *testing.T) {
		p, c, evs := newPipe(), newClock(), newEvents()
		ctx, cancel := context.WithCancel(context.Background())
		done := follow(t, ctx, p, &source{evs: evs}, sse.Options{Ticker: c.ticker})
		evs.ch <- event{seq: 1}
		p.next(t)
		cancel()
		waitDone(t, "the stream outlived its client", done)
		waitDone(t, "the reader of the run's events outlived the stream", evs.ended)
	})
	t.Run("queued", func(t *testing.T) {
		p, c := newPipe(), newClock()
		ctx, cancel := context.WithCancel(context.Background())
		done := follow(t, ctx, p, &source{start: make(chan struct{})}, sse.Options{Ticker: c.ticker})
		cancel()
		waitDone(t, "the wait outlived its client", done)
	})
}

// TestFollowStopsOnAFailedWrite: a client that cannot be written to (gone,
// or too slow for the write deadline) ends the stream and its reader.
func TestFollowStopsOnAFailedWrite(t *testing.T) {
	p, c, evs := newPipe(), newClock(), newEvents()
	done := follow(t, context.Background(), p, &source{evs: evs}, sse.Options{Ticker: c.ticker})
	p.mu.Lock()
	p.fail = errors.New("broken pipe")
	p.mu.Unlock()
	evs.ch <- event{seq: 1}
	waitDone(t, "the stream went on after a failed write", done)
	waitDone(t, "the reader of the run's events outlived the stream", evs.ended)
}

// TestFollowGivesUpOnARunThatNeverStarts: MaxWait bounds the wait.
func TestFollowGivesUpOnARunThatNeverStarts(t *testing.T) {
	p, c := newPipe(), newClock()
	done := follow(t, context.Background(), p, &source{start: make(chan struct{})}, sse.Options{Ticker: c.ticker, MaxWait: time.Millisecond})
	waitDone(t, "the wait outlived MaxWait", done)
}
