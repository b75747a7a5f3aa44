package notify

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
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
	DefaultFlushTimeout   = 3 * time.Second
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
	// AfterFunc runs f once d has passed, unless the returned stop is
	// called first: the timers of attempt timeouts, backoff waits and the
	// flush at Close run on it. time.AfterFunc if nil; tests fire them at will.
	AfterFunc func(d time.Duration, f func()) (stop func() bool)
	// FlushTimeout bounds the flush at Close: each waiting event gets one
	// more attempt, without backoff, within this time in all.
	FlushTimeout time.Duration
	// Outbox, when set, keeps every event until it is delivered or given
	// up: what the flush at Close could not deliver is sent by the next
	// Dispatcher given the same Outbox, first and in order. It also
	// numbers events, so sequence numbers go on across restarts.
	Outbox Outbox
}

// Outbox is where a Dispatcher keeps the events it has not delivered yet.
// Its methods must be safe for concurrent use.
type Outbox interface {
	// Add records ev for each of sinks (by name) under the next number of
	// ev.Env's sequence, returning the number and one ID per sink.
	Add(ctx context.Context, ev Event, sinks []string) (seq uint64, ids []int64, err error)
	// Done removes an entry that was delivered or given up.
	Done(ctx context.Context, id int64) error
	// Pending lists the entries not done, oldest first.
	Pending(ctx context.Context) ([]Pending, error)
}

// Pending is an event an Outbox keeps for one sink.
type Pending struct {
	ID    int64
	Sink  string
	Seq   uint64
	Event Event
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
	if o.AfterFunc == nil {
		o.AfterFunc = func(d time.Duration, f func()) func() bool { return time.AfterFunc(d, f).Stop }
	}
	if o.FlushTimeout <= 0 {
		o.FlushTimeout = DefaultFlushTimeout
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

	ctx     context.Context // cancelled when Close's flush is over
	cancel  context.CancelFunc
	closing chan struct{}  // closed by Close: one last attempt each, no backoff
	wg      sync.WaitGroup // one per running worker
	lost    atomic.Int64   // events abandoned at Close, not kept in the outbox

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

// item is one event on its way to one sink; id is its outbox entry (0:
// none).
type item struct {
	ev  Event
	seq uint64
	id  int64
}

// New checks every sink and returns a Dispatcher that delivers to them, or
// an error listing every problem found (an unknown kind, a URL that is not
// http or https, a webhook without a secret, an unknown event kind, a
// missing or repeated name). Errors never contain a URL or a secret. With
// an Outbox, the events it keeps are queued first, in order; those of
// sinks no longer configured are dropped from it with a warning.
func New(sinks []Sink, opts Options) (*Dispatcher, error) {
	if err := validateSinks(sinks); err != nil {
		return nil, err
	}
	opts = opts.withDefaults()
	ctx, cancel := context.WithCancel(context.Background())
	d := &Dispatcher{
		sinks:   append([]Sink(nil), sinks...),
		opts:    opts,
		log:     opts.Logger,
		ctx:     ctx,
		cancel:  cancel,
		closing: make(chan struct{}),
		seq:     map[string]uint64{},
		queues:  map[queueKey]*queue{},
	}
	if err := d.resume(); err != nil {
		cancel()
		return nil, err
	}
	return d, nil
}

// resume queues what the outbox kept from before.
func (d *Dispatcher) resume() error {
	if d.opts.Outbox == nil {
		return nil
	}
	pending, err := d.opts.Outbox.Pending(context.Background())
	if err != nil {
		return fmt.Errorf("notify: read the events kept for delivery: %w", err)
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, p := range pending {
		i := slices.IndexFunc(d.sinks, func(s Sink) bool { return s.Name == p.Sink })
		if i < 0 {
			d.log.Warn("notify: dropping a kept event of a sink no longer configured", "sink", p.Sink, "env", p.Event.Env, "seq", p.Seq)
			d.done(item{id: p.ID})
			continue
		}
		d.enqueueLocked(queueKey{i, p.Event.Env}, item{ev: p.Event, seq: p.Seq, id: p.ID})
	}
	if len(pending) > 0 {
		d.log.Info("notify: delivering events kept from before the restart", "events", len(pending))
	}
	return nil
}

// Notify enqueues ev for every sink that wants its kind and returns at
// once: it never blocks on the network and never fails the caller. With an
// Outbox it records the event there first (a failure is logged, and the
// event is still delivered, only not kept). An event of an unknown kind,
// or one notified after Close, is logged and dropped.
func (d *Dispatcher) Notify(ev Event) {
	if !knownKind(string(ev.Kind)) {
		d.log.Error("notify: dropping event of unknown kind", "kind", ev.Kind, "env", ev.Env)
		return
	}
	ev.Kind = Canonical(string(ev.Kind))
	if ev.Time.IsZero() {
		ev.Time = d.opts.Now()
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		d.log.Warn("notify: dropping event notified after Close", "kind", ev.Kind, "env", ev.Env)
		return
	}
	var idx []int
	var names []string
	for i, s := range d.sinks {
		if s.wants(ev.Kind) {
			idx, names = append(idx, i), append(names, s.Name)
		}
	}
	if len(idx) == 0 {
		return
	}
	seq, ids := d.number(ev, names)
	for j, i := range idx {
		d.enqueueLocked(queueKey{i, ev.Env}, item{ev: ev, seq: seq, id: ids[j]})
	}
}

// number gives ev its sequence number and, with an Outbox, records it there
// for the named sinks; ids are the outbox entries (0: none). d.mu is held,
// so numbers and queues agree on the order.
func (d *Dispatcher) number(ev Event, sinks []string) (uint64, []int64) {
	ids := make([]int64, len(sinks))
	if d.opts.Outbox != nil {
		seq, got, err := d.opts.Outbox.Add(context.Background(), ev, sinks)
		if err == nil && len(got) == len(sinks) {
			d.seq[ev.Env] = seq
			return seq, got
		}
		d.log.Error("notify: cannot keep event for delivery after a restart", "kind", ev.Kind, "env", ev.Env, "error", err)
	}
	d.seq[ev.Env]++
	return d.seq[ev.Env], ids
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
		it := q.items[0]
		q.items = q.items[1:]
		if d.ctx.Err() != nil {
			// Close's flush is over: keep the rest in one go.
			rest := append([]item{it}, q.items...)
			q.items = nil
			d.mu.Unlock()
			d.keep(sink, k.env, rest)
			continue
		}
		d.mu.Unlock()
		if d.deliver(sink, it) {
			d.done(it)
			continue
		}
		// Closing, and this event's last attempt failed: the later ones
		// must not overtake it, so they are kept with it.
		d.mu.Lock()
		rest := append([]item{it}, q.items...)
		q.items = nil
		d.mu.Unlock()
		d.keep(sink, k.env, rest)
	}
}

// done forgets a delivered or given-up event's outbox entry.
func (d *Dispatcher) done(it item) {
	if it.id == 0 {
		return
	}
	if err := d.opts.Outbox.Done(context.Background(), it.id); err != nil {
		d.log.Error("notify: cannot remove a delivered event from the outbox; it will be sent again after a restart",
			"env", it.ev.Env, "seq", it.seq, "error", err)
	}
}

// keep leaves undelivered events at Close in the outbox for the next
// Dispatcher; those that are not in it are abandoned.
func (d *Dispatcher) keep(s Sink, env string, items []item) {
	kept := 0
	for _, it := range items {
		if it.id != 0 {
			kept++
		}
	}
	if kept > 0 {
		d.log.Warn("notify: keeping undelivered events for delivery after a restart", "sink", s.Name, "env", env, "events", kept)
	}
	if n := len(items) - kept; n > 0 {
		d.lost.Add(int64(n))
		d.log.Error("notify: abandoning undelivered events at close", "sink", s.Name, "env", env, "events", n)
	}
}

// isClosing reports whether Close has begun: attempts are then the last.
func (d *Dispatcher) isClosing() bool {
	select {
	case <-d.closing:
		return true
	default:
		return false
	}
}

// Close stops accepting events and flushes: every waiting event gets one
// more attempt, without backoff (a wait for a retry ends at once), for at
// most FlushTimeout in all, or until ctx ends, whichever comes first. Then
// in-flight requests are cancelled. Events not delivered by then are kept
// in the Outbox for the next Dispatcher (logged as kept), or, without one,
// abandoned: Close then returns an error counting them and wrapping ctx's
// cause (or ErrFlushTimeout). An event's later ones never overtake it: a
// queue stops at its first failure. Calling Close again returns at once.
func (d *Dispatcher) Close(ctx context.Context) error {
	d.mu.Lock()
	if !d.closed {
		d.closed = true
		close(d.closing)
	}
	d.mu.Unlock()

	stop := d.opts.AfterFunc(d.opts.FlushTimeout, d.cancel)
	defer stop()
	done := make(chan struct{})
	go func() {
		d.wg.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-ctx.Done():
		d.cancel() // keep or abandon what is left; workers stop promptly
		<-done
	}
	d.cancel()
	if n := d.lost.Load(); n > 0 {
		// A later Close with a live ctx still reports the loss.
		cause := cmp.Or(context.Cause(ctx), ErrFlushTimeout)
		return fmt.Errorf("notify: close: %d undelivered events abandoned: %w", n, cause)
	}
	return nil
}

// ErrFlushTimeout is what Close's error wraps when the flush ran out of
// FlushTimeout with events it could not keep.
var ErrFlushTimeout = errors.New("the flush at close ran out of time")
