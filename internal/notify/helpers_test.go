package notify

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"knit.dev/knit/internal/testtools"
)

// hangGuard bounds every wait so a broken dispatcher fails instead of
// hanging; it is not a timing assertion.
const hangGuard = 10 * time.Second

// hit is one request a receiver saw and the status it answered.
type hit struct {
	ctx    context.Context // the request's; done when the client gives up
	header http.Header
	body   []byte
	env    string // from a webhook body
	seq    uint64 // from a webhook body
	status int
}

// receiver is a webhook endpoint on 127.0.0.1 that records every request.
type receiver struct {
	*httptest.Server
	hits chan hit

	mu  sync.Mutex
	all []hit
}

// newReceiver starts a receiver; respond picks the status for a request,
// given how many requests came before it, and may block.
func newReceiver(t *testing.T, respond func(h hit, n int) int) *receiver {
	t.Helper()
	r := &receiver{hits: make(chan hit, 1000)}
	r.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		h := hit{ctx: req.Context(), header: req.Header.Clone(), body: body}
		var wb struct {
			Env string `json:"env"`
			Seq uint64 `json:"seq"`
		}
		_ = json.Unmarshal(body, &wb)
		h.env, h.seq = wb.Env, wb.Seq
		r.mu.Lock()
		n := len(r.all)
		r.mu.Unlock()
		h.status = http.StatusOK
		if respond != nil {
			h.status = respond(h, n)
		}
		r.mu.Lock()
		r.all = append(r.all, h)
		r.mu.Unlock()
		r.hits <- h
		w.WriteHeader(h.status)
	}))
	t.Cleanup(r.Close)
	return r
}

// next returns the next request the receiver answered.
func (r *receiver) next(t *testing.T) hit {
	t.Helper()
	select {
	case h := <-r.hits:
		return h
	case <-time.After(hangGuard):
		t.Fatal("receiver got no request")
		return hit{}
	}
}

// seen returns every request answered so far, as "env#seq:status".
func (r *receiver) seen() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, h := range r.all {
		out = append(out, fmt.Sprintf("%s#%d:%d", h.env, h.seq, h.status))
	}
	return out
}

// downURL returns the URL of a receiver that is down (testtools.DownURL).
func downURL(t *testing.T) string { return testtools.DownURL(t) + "/hook" }

// logRecorder is a slog.Handler that keeps records and streams their text.
type logRecorder struct {
	lines chan string
	mu    sync.Mutex
	all   []string
}

func newLogRecorder() *logRecorder { return &logRecorder{lines: make(chan string, 1000)} }

func (l *logRecorder) Enabled(context.Context, slog.Level) bool { return true }
func (l *logRecorder) WithAttrs([]slog.Attr) slog.Handler       { return l }
func (l *logRecorder) WithGroup(string) slog.Handler            { return l }

// Handle renders a record as "LEVEL msg k=v k=v".
func (l *logRecorder) Handle(_ context.Context, r slog.Record) error {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s", r.Level, r.Message)
	r.Attrs(func(a slog.Attr) bool {
		fmt.Fprintf(&b, " %s=%v", a.Key, a.Value.Resolve())
		return true
	})
	l.mu.Lock()
	l.all = append(l.all, b.String())
	l.mu.Unlock()
	select {
	case l.lines <- b.String():
	default:
	}
	return nil
}

// waitFor returns the first logged line containing every one of parts.
func (l *logRecorder) waitFor(t *testing.T, parts ...string) string {
	t.Helper()
	deadline := time.After(hangGuard)
	for {
		select {
		case line := <-l.lines:
			if containsAll(line, parts) {
				return line
			}
		case <-deadline:
			t.Fatalf("no log line with %q", parts)
			return ""
		}
	}
}

// text returns everything logged so far.
func (l *logRecorder) text() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Join(l.all, "\n")
}

func containsAll(s string, parts []string) bool {
	for _, p := range parts {
		if !strings.Contains(s, p) {
			return false
		}
	}
	return true
}

// fastOptions retries quickly and logs to rec.
func fastOptions(rec *logRecorder) Options {
	return Options{
		Logger:     slog.New(rec),
		Backoff:    time.Millisecond,
		MaxBackoff: 4 * time.Millisecond,
		Now:        func() time.Time { return time.Date(2024, 5, 1, 12, 0, 0, 0, time.UTC) },
	}
}

// newDispatcher builds a Dispatcher and closes it when the test ends.
func newDispatcher(t *testing.T, sinks []Sink, opts Options) *Dispatcher {
	t.Helper()
	d, err := New(sinks, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
		defer cancel()
		_ = d.Close(ctx)
	})
	return d
}

// closeNow drains d, failing the test if that does not finish.
func closeNow(t *testing.T, d *Dispatcher) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
	defer cancel()
	if err := d.Close(ctx); err != nil {
		t.Fatalf("Close: %v", err)
	}
}

// wait returns once the receiver has answered n requests in all.
func (r *receiver) wait(t *testing.T, n int) {
	t.Helper()
	for {
		r.mu.Lock()
		got := len(r.all)
		r.mu.Unlock()
		if got >= n {
			return
		}
		r.next(t)
	}
}

// fakeTimers is an Options.AfterFunc whose timers fire only when the test
// says, so no test depends on how fast the machine is.
type fakeTimers struct {
	mu      sync.Mutex
	pending []*fakeTimer
	added   chan struct{}
}

type fakeTimer struct {
	d       time.Duration
	f       func()
	stopped bool
}

func newFakeTimers() *fakeTimers { return &fakeTimers{added: make(chan struct{}, 1000)} }

func (ft *fakeTimers) AfterFunc(d time.Duration, f func()) func() bool {
	t := &fakeTimer{d: d, f: f}
	ft.mu.Lock()
	ft.pending = append(ft.pending, t)
	ft.mu.Unlock()
	select {
	case ft.added <- struct{}{}:
	default:
	}
	return func() bool {
		ft.mu.Lock()
		defer ft.mu.Unlock()
		was := !t.stopped
		t.stopped = true
		return was
	}
}

// take removes and returns the live timers of duration d.
func (ft *fakeTimers) take(d time.Duration) []*fakeTimer {
	ft.mu.Lock()
	defer ft.mu.Unlock()
	var due, rest []*fakeTimer
	for _, t := range ft.pending {
		switch {
		case t.stopped:
		case t.d == d:
			t.stopped = true
			due = append(due, t)
		default:
			rest = append(rest, t)
		}
	}
	ft.pending = rest
	return due
}

// waitFor waits until a live timer of duration d exists.
func (ft *fakeTimers) waitFor(t *testing.T, d time.Duration) {
	t.Helper()
	deadline := time.After(hangGuard)
	for {
		ft.mu.Lock()
		for _, tm := range ft.pending {
			if !tm.stopped && tm.d == d {
				ft.mu.Unlock()
				return
			}
		}
		ft.mu.Unlock()
		select {
		case <-ft.added:
		case <-deadline:
			t.Fatalf("no timer of %v was set", d)
		}
	}
}

// fire runs every live timer of duration d, waiting for one to exist.
func (ft *fakeTimers) fire(t *testing.T, d time.Duration) {
	t.Helper()
	ft.waitFor(t, d)
	for _, tm := range ft.take(d) {
		tm.f()
	}
}

// memOutbox is an Outbox in memory, shared by the Dispatchers of a test as
// a store is by the servers of one data dir.
type memOutbox struct {
	mu      sync.Mutex
	nextID  int64
	seqs    map[string]uint64
	entries []Pending
}

func (m *memOutbox) Add(_ context.Context, ev Event, sinks []string) (uint64, []int64, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.seqs == nil {
		m.seqs = map[string]uint64{}
	}
	m.seqs[ev.Env]++
	var ids []int64
	for _, s := range sinks {
		m.nextID++
		ids = append(ids, m.nextID)
		m.entries = append(m.entries, Pending{ID: m.nextID, Sink: s, Seq: m.seqs[ev.Env], Event: ev})
	}
	return m.seqs[ev.Env], ids, nil
}

func (m *memOutbox) Done(_ context.Context, id int64) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.entries = slices.DeleteFunc(m.entries, func(p Pending) bool { return p.ID == id })
	return nil
}

func (m *memOutbox) Pending(context.Context) ([]Pending, error) { return m.pending(), nil }

func (m *memOutbox) pending() []Pending {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.entries)
}
