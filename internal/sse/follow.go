package sse

import (
	"context"
	"time"
)

// KeepAlive is how often an idle stream gets a comment, so proxies and
// clients keep the connection.
const KeepAlive = 15 * time.Second

// Message is one event as a stream writes it (ID 0: none).
type Message struct {
	ID    int64
	Event string
	Data  string
}

// Found is what a Source found of its run: exactly one of Queued (not
// started yet: Follow looks again), Events (live: Follow streams them) or
// neither (over, and not live here: Follow sends Record and stops).
type Found[E any] struct {
	Queued bool
	// Events are the run's events in order from where the client's stream
	// starts (engine.Subscription.Channel), closed after the run's last
	// event or when the ctx given to Find ends (Follow's: it ends when
	// Follow returns).
	Events <-chan E
	// Record is how a run that is over ended, from its record: the
	// stream's last messages.
	Record []Message
}

// Source is the run one stream follows, as the API or the dashboard sees
// it: Follow asks it where the run is and hands it each event to encode.
type Source[E any] interface {
	// Find looks the run up (and checks the client may see it: a run it
	// may not see is "over", with the Record the client may read). ctx
	// ends when Follow returns.
	Find(ctx context.Context) Found[E]
	// Encode is one event as the client reads it; last ends the stream
	// after msgs.
	Encode(ev E) (msgs []Message, last bool)
}

// Options tune Follow; the zero value waits for a queued run only as long
// as the client stays and looks for it on every keep-alive.
type Options struct {
	// Started, when set, is closed once a queued run starts: Follow looks
	// again at once.
	Started <-chan struct{}
	// Poll is how often Follow looks for a queued run again (0: on
	// Started and on keep-alives only).
	Poll time.Duration
	// MaxWait bounds the wait for a queued run (0: none).
	MaxWait time.Duration
	// KeepAlive is the idle comments' period (0: KeepAlive).
	KeepAlive time.Duration
	// Ticker makes the keep-alive and poll tickers (nil: time.NewTicker),
	// so tests drive them.
	Ticker func(time.Duration) (ticks <-chan time.Time, stop func())
}

func realTicker(d time.Duration) (<-chan time.Time, func()) {
	t := time.NewTicker(d)
	return t.C, t.Stop
}

// Follow streams the run src finds: it waits for a queued run to start
// (a "queued" comment on each keep-alive), then sends each of its events
// as src encodes them, with a comment when idle, until the run's last
// event, or sends the record of a run that is over. It returns when the
// run ends, the client goes (a failed write, or ctx: the request's
// context, which also ends when the server closes) or the wait for a
// queued run runs out.
func Follow[E any](ctx context.Context, st *Stream, src Source[E], o Options) {
	if o.KeepAlive <= 0 {
		o.KeepAlive = KeepAlive
	}
	if o.Ticker == nil {
		o.Ticker = realTicker
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel() // ends the reader of Found.Events
	idle, stop := o.Ticker(o.KeepAlive)
	defer stop()
	found, ok := waitStart(ctx, st, src, o, idle)
	if !ok {
		return
	}
	if found.Events == nil {
		_ = sendAll(st, found.Record)
		return
	}
	for {
		select {
		case ev, ok := <-found.Events:
			if !ok {
				return
			}
			msgs, last := src.Encode(ev)
			if sendAll(st, msgs) != nil || last {
				return
			}
		case <-idle:
			if st.Comment("keep-alive") != nil {
				return
			}
		case <-ctx.Done():
			return
		}
	}
}

// waitStart asks src for the run until it is no longer queued; ok is false
// when the stream should end instead.
func waitStart[E any](ctx context.Context, st *Stream, src Source[E], o Options, idle <-chan time.Time) (found Found[E], ok bool) {
	var poll, expired <-chan time.Time
	if o.Poll > 0 {
		ticks, stop := o.Ticker(o.Poll)
		defer stop()
		poll = ticks
	}
	if o.MaxWait > 0 {
		t := time.NewTimer(o.MaxWait)
		defer t.Stop()
		expired = t.C
	}
	started := o.Started
	for {
		if found = src.Find(ctx); !found.Queued {
			return found, true
		}
		select {
		case <-started:
			started = nil // closed: look once more, then by poll
		case <-poll:
		case <-idle:
			if st.Comment("queued") != nil {
				return found, false
			}
		case <-expired:
			return found, false
		case <-ctx.Done():
			return found, false
		}
	}
}

// sendAll writes msgs in order, stopping at the first failed write.
func sendAll(st *Stream, msgs []Message) error {
	for _, m := range msgs {
		if err := st.Send(m.ID, m.Event, m.Data); err != nil {
			return err
		}
	}
	return nil
}
