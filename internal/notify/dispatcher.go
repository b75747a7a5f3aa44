package notify

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
)

// Defaults for the zero Options.
const (
	DefaultMaxAttempts    = 5
	DefaultBackoff        = time.Second
	DefaultMaxBackoff     = time.Minute
	DefaultAttemptTimeout = 10 * time.Second
	DefaultQueueSize      = 100
)

// Options tunes a Dispatcher. Zero fields take the defaults above.
type Options struct {
	// Client sends the requests; http.DefaultClient if nil. Each attempt is
	// bounded by AttemptTimeout whatever the client's own timeout.
	Client *http.Client
	// Logger receives delivery failures, give-ups and dropped events;
	// slog.Default() if nil. Logs name the sink and the URL's host only.
	Logger *slog.Logger
	// MaxAttempts is how often one event is tried before it is given up.
	MaxAttempts int
	// Backoff is the wait after the first failed attempt; it doubles after
	// each further failure up to MaxBackoff.
	Backoff, MaxBackoff time.Duration
	// AttemptTimeout bounds one HTTP request.
	AttemptTimeout time.Duration
	// QueueSize bounds the events waiting per (sink, environment); when
	// full, the oldest waiting event is dropped with a warning.
	QueueSize int
	// Now stamps events notified with a zero Time; time.Now if nil.
	Now func() time.Time
}

func (o Options) withDefaults() Options {
	if o.Client == nil {
		o.Client = http.DefaultClient
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.MaxAttempts <= 0 {
		o.MaxAttempts = DefaultMaxAttempts
	}
	if o.Backoff <= 0 {
		o.Backoff = DefaultBackoff
	}
	if o.MaxBackoff <= 0 {
		o.MaxBackoff = max(DefaultMaxBackoff, o.Backoff)
	}
	if o.AttemptTimeout <= 0 {
		o.AttemptTimeout = DefaultAttemptTimeout
	}
	if o.QueueSize <= 0 {
		o.QueueSize = DefaultQueueSize
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	return o
}

// Dispatcher fans events out to sinks. For each sink, events of one
// environment are delivered one at a time in the order Notify saw them: an
// event is sent only after the previous one was delivered or given up.
// Sinks and environments do not wait for each other. Every event gets a
// per-environment sequence number, increasing by one per notified event
// and shared by all sinks, so a receiver can order and de-duplicate (it
// sees gaps where its Events filter or a full queue skipped one).
//
// A Dispatcher is safe for concurrent use.
type Dispatcher struct {
	sinks []Sink
	opts  Options
	log   *slog.Logger

	ctx    context.Context // cancelled when Close gives up waiting
	cancel context.CancelFunc
	wg     sync.WaitGroup // one per running worker
	lost   atomic.Int64   // events abandoned because Close ran out of time

	mu     sync.Mutex
	closed bool
	seq    map[string]uint64 // last sequence number per environment
	queues map[queueKey]*queue
}

// queueKey names the queue of one sink (by index) and one environment.
type queueKey struct {
	sink int
	env  string
}

// queue holds the events waiting for one (sink, environment). Its fields
// are guarded by Dispatcher.mu. A worker goroutine runs while it is
// non-empty or delivering; an idle queue is removed.
type queue struct {
	items   []item
	running bool
}

// item is one event on its way to one sink.
type item struct {
	ev  Event
	seq uint64
}

// New checks every sink and returns a Dispatcher that delivers to them, or
// an error listing every problem found (an unknown kind, a URL that is not
// http or https, a webhook without a secret, an unknown event kind, a
// missing or repeated name). Errors never contain a URL or a secret.
func New(sinks []Sink, opts Options) (*Dispatcher, error) {
	if err := validateSinks(sinks); err != nil {
		return nil, err
	}
	opts = opts.withDefaults()
	ctx, cancel := context.WithCancel(context.Background())
	return &Dispatcher{
		sinks:  append([]Sink(nil), sinks...),
		opts:   opts,
		log:    opts.Logger,
		ctx:    ctx,
		cancel: cancel,
		seq:    map[string]uint64{},
		queues: map[queueKey]*queue{},
	}, nil
}

// Notify enqueues ev for every sink that wants its kind and returns at
// once: it never blocks on the network and never fails the caller. An event
// of an unknown kind, or one notified after Close, is logged and dropped.
func (d *Dispatcher) Notify(ev Event) {
	if !knownKind(ev.Kind) {
		d.log.Error("notify: dropping event of unknown kind", "kind", ev.Kind, "env", ev.Env)
		return
	}
	if ev.Time.IsZero() {
		ev.Time = d.opts.Now()
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		d.log.Warn("notify: dropping event notified after Close", "kind", ev.Kind, "env", ev.Env)
		return
	}
	d.seq[ev.Env]++
	it := item{ev: ev, seq: d.seq[ev.Env]}
	for i, s := range d.sinks {
		if s.wants(ev.Kind) {
			d.enqueueLocked(queueKey{i, ev.Env}, it)
		}
	}
}

// enqueueLocked appends it to the queue for k, dropping the oldest waiting
// event if the queue is full, and starts the queue's worker if idle.
func (d *Dispatcher) enqueueLocked(k queueKey, it item) {
	q := d.queues[k]
	if q == nil {
		q = &queue{}
		d.queues[k] = q
	}
	if len(q.items) >= d.opts.QueueSize {
		old := q.items[0]
		q.items = q.items[1:]
		d.log.Warn("notify: queue full, dropping oldest event",
			"sink", d.sinks[k.sink].Name, "env", k.env, "kind", old.ev.Kind, "seq", old.seq)
	}
	q.items = append(q.items, it)
	if !q.running {
		q.running = true
		d.wg.Add(1)
		go d.work(k, q)
	}
}

// work delivers q's events one by one until it is empty, then retires q.
func (d *Dispatcher) work(k queueKey, q *queue) {
	defer d.wg.Done()
	sink := d.sinks[k.sink]
	for {
		d.mu.Lock()
		if len(q.items) == 0 {
			q.running = false
			delete(d.queues, k)
			d.mu.Unlock()
			return
		}
		if d.ctx.Err() != nil {
			// Close ran out of time: abandon the rest in one go.
			n := len(q.items)
			q.items = nil
			d.mu.Unlock()
			d.abandon(sink, k.env, n)
			continue
		}
		it := q.items[0]
		q.items = q.items[1:]
		d.mu.Unlock()
		if !d.deliver(sink, it) {
			d.abandon(sink, k.env, 1)
		}
	}
}

func (d *Dispatcher) abandon(s Sink, env string, n int) {
	d.lost.Add(int64(n))
	d.log.Error("notify: abandoning undelivered events at close", "sink", s.Name, "env", env, "events", n)
}

// Close stops accepting events and waits until every queued event has been
// delivered or given up, or until ctx ends. In the latter case it abandons
// the remaining events (cancelling requests and backoff waits), waits for
// the workers to stop, and returns an error counting them and wrapping
// ctx's cause (context.Canceled on a later call). It returns nil if
// nothing was abandoned. Calling Close again returns at once.
func (d *Dispatcher) Close(ctx context.Context) error {
	d.mu.Lock()
	d.closed = true
	d.mu.Unlock()

	done := make(chan struct{})
	go func() {
		d.wg.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-ctx.Done():
		d.cancel() // abandon what is left; workers stop promptly
		<-done
	}
	d.cancel()
	if n := d.lost.Load(); n > 0 {
		// A later Close with a live ctx still reports the loss.
		cause := cmp.Or(context.Cause(ctx), context.Canceled)
		return fmt.Errorf("notify: close: %d undelivered events abandoned: %w", n, cause)
	}
	return nil
}
