package notify

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

func TestWebhookGetsSignedEventsInOrder(t *testing.T) {
	rcv := newReceiver(t, nil)
	const secret = "s3cr3t"
	d := newDispatcher(t, []Sink{{Name: "ops", Kind: SinkWebhook, URL: rcv.URL + "/hook", Secret: secret}}, fastOptions(newLogRecorder()))

	d.Notify(Event{Kind: KindRunFailed, Env: "prod", RunID: "r1", Component: "vpc", Actor: "alice",
		Summary: "apply failed", URL: "https://knit.example/runs/r1"})
	for _, k := range []Kind{KindDriftFound, KindApprovalNeeded, KindTeardownDone, KindRunSucceeded} {
		d.Notify(Event{Kind: k, Env: "prod"})
	}

	for i := range 5 {
		h := rcv.next(t)
		mac := hmac.New(sha256.New, []byte(secret))
		mac.Write(h.body)
		if want := "sha256=" + hex.EncodeToString(mac.Sum(nil)); h.header.Get("X-Knit-Signature-256") != want {
			t.Fatalf("event %d: signature %q, want %q", i+1, h.header.Get("X-Knit-Signature-256"), want)
		}
		if h.seq != uint64(i+1) {
			t.Fatalf("event %d arrived with seq %d: out of order", i+1, h.seq)
		}
		if ct := h.header.Get("Content-Type"); ct != "application/json" {
			t.Errorf("Content-Type = %q", ct)
		}
		if i > 0 {
			continue
		}
		var body map[string]any
		if err := json.Unmarshal(h.body, &body); err != nil {
			t.Fatal(err)
		}
		want := map[string]any{
			"sink": "ops", "seq": 1.0, "kind": "run.failed", "env": "prod", "runId": "r1",
			"component": "vpc", "actor": "alice", "summary": "apply failed",
			"time": "2024-05-01T12:00:00Z", "url": "https://knit.example/runs/r1",
		}
		for k, v := range want {
			if body[k] != v {
				t.Errorf("body[%q] = %v, want %v", k, body[k], v)
			}
		}
		// An invalid revision's, a preview's and a release's fields are there, empty, for other kinds.
		for k, v := range map[string]any{"file": "", "revision": 0.0, "commit": "", "branch": "", "markdown": "", "pipeline": "", "release": "", "stage": ""} {
			want[k] = v
			if body[k] != v {
				t.Errorf("body[%q] = %v, want %v", k, body[k], v)
			}
		}
		if errs, ok := body["errors"].([]any); !ok || len(errs) != 0 {
			t.Errorf("body[errors] = %v, want []", body["errors"])
		}
		want["errors"] = []any{}
		if len(body) != len(want) {
			t.Errorf("body has %d fields, want %d: %s", len(body), len(want), h.body)
		}
		if got := h.header.Get("X-Knit-Event"); got != string(KindRunFailed) {
			t.Errorf("X-Knit-Event = %q", got)
		}
	}
}

func TestSequenceIsPerEnvironment(t *testing.T) {
	rcv := newReceiver(t, nil)
	d := newDispatcher(t, []Sink{{Name: "ops", Kind: SinkWebhook, URL: rcv.URL, Secret: "k"}}, fastOptions(newLogRecorder()))
	for _, env := range []string{"a", "b", "a", "b", "a"} {
		d.Notify(Event{Kind: KindDriftFound, Env: env})
	}
	closeNow(t, d)
	var a, b []string
	for _, s := range rcv.seen() {
		if strings.HasPrefix(s, "a#") {
			a = append(a, s)
		} else {
			b = append(b, s)
		}
	}
	if want := []string{"a#1:200", "a#2:200", "a#3:200"}; !slices.Equal(a, want) {
		t.Errorf("env a got %q, want %q", a, want)
	}
	if want := []string{"b#1:200", "b#2:200"}; !slices.Equal(b, want) {
		t.Errorf("env b got %q, want %q", b, want)
	}
}

// TestEventsFilter: a sink gets only the kinds it names, by their one
// spelling or an old one (approval-needed for approval.needed).
func TestEventsFilter(t *testing.T) {
	all, drift := newReceiver(t, nil), newReceiver(t, nil)
	sinks := []Sink{
		{Name: "all", Kind: SinkWebhook, URL: all.URL, Secret: "k"},
		{Name: "drift", Kind: SinkWebhook, URL: drift.URL, Secret: "k", Events: []string{string(KindDriftFound), "approval-needed"}},
	}
	if err := validateSinks(sinks); err != nil {
		t.Fatalf("a sink naming an old spelling: %v", err)
	}
	d := newDispatcher(t, sinks, fastOptions(newLogRecorder()))
	for _, k := range []Kind{KindRunFailed, KindDriftFound, KindRunSucceeded, KindApprovalNeeded} {
		d.Notify(Event{Kind: k, Env: "prod"})
	}
	closeNow(t, d)
	if got, want := all.seen(), []string{"prod#1:200", "prod#2:200", "prod#3:200", "prod#4:200"}; !slices.Equal(got, want) {
		t.Errorf("unfiltered sink got %q, want %q", got, want)
	}
	if got, want := drift.seen(), []string{"prod#2:200", "prod#4:200"}; !slices.Equal(got, want) {
		t.Errorf("filtered sink got %q, want %q (drift.found and approval.needed only)", got, want)
	}
}

func TestRetriesKeepOrder(t *testing.T) {
	// The first event is answered 500, 429, then 200; the second must come
	// only after the first got through.
	rcv := newReceiver(t, func(_ hit, n int) int {
		return []int{500, 429, 200, 200}[min(n, 3)]
	})
	rec := newLogRecorder()
	d := newDispatcher(t, []Sink{{Name: "ops", Kind: SinkWebhook, URL: rcv.URL, Secret: "k"}}, fastOptions(rec))
	d.Notify(Event{Kind: KindRunFailed, Env: "prod"})
	d.Notify(Event{Kind: KindRunSucceeded, Env: "prod"})
	rcv.wait(t, 4)
	closeNow(t, d)
	if got, want := rcv.seen(), []string{"prod#1:500", "prod#1:429", "prod#1:200", "prod#2:200"}; !slices.Equal(got, want) {
		t.Fatalf("receiver saw %q, want %q", got, want)
	}
	if n := strings.Count(rec.text(), "will retry"); n != 2 {
		t.Errorf("logged %d retries, want 2:\n%s", n, rec.text())
	}
}

func TestGivesUpAndMovesOn(t *testing.T) {
	// Event 1 is refused with 400 (not retried), event 2 always fails with
	// 503 (tried MaxAttempts times), event 3 is delivered.
	rcv := newReceiver(t, func(h hit, _ int) int {
		return map[uint64]int{1: 400, 2: 503, 3: 200}[h.seq]
	})
	rec := newLogRecorder()
	opts := fastOptions(rec)
	opts.MaxAttempts = 3
	d := newDispatcher(t, []Sink{{Name: "ops", Kind: SinkWebhook, URL: rcv.URL, Secret: "k"}}, opts)
	for range 3 {
		d.Notify(Event{Kind: KindDriftFound, Env: "prod"})
	}
	rcv.wait(t, 5)
	closeNow(t, d)
	want := []string{"prod#1:400", "prod#2:503", "prod#2:503", "prod#2:503", "prod#3:200"}
	if got := rcv.seen(); !slices.Equal(got, want) {
		t.Fatalf("receiver saw %q, want %q", got, want)
	}
	for _, line := range []string{"seq=1 attempt=1 status=400", "seq=2 attempt=3 status=503"} {
		if !strings.Contains(rec.text(), "giving up on event") || !strings.Contains(rec.text(), line) {
			t.Errorf("no give-up logged with %q:\n%s", line, rec.text())
		}
	}
}

func TestHangingReceiverTimesOut(t *testing.T) {
	// The first attempt hangs until the dispatcher gives up on it; the
	// retry is answered. The attempt timeout and the backoff run on fake
	// timers the test fires, so a busy machine cannot make the retry late.
	// Requests are counted as they arrive: the hung one is recorded only
	// once its connection closes, which may be after the retry arrived.
	hung := make(chan struct{})
	var arrived atomic.Int32
	rcv := newReceiver(t, func(h hit, _ int) int {
		if arrived.Add(1) == 1 {
			close(hung)
			<-h.ctx.Done()
		}
		return 200
	})
	rec := newLogRecorder()
	opts := fastOptions(rec)
	timers := newFakeTimers()
	opts.AfterFunc = timers.AfterFunc
	opts.Client = &http.Client{} // no timeout of its own
	opts.AttemptTimeout = 7 * time.Second
	d := newDispatcher(t, []Sink{{Name: "ops", Kind: SinkWebhook, URL: rcv.URL, Secret: "k"}}, opts)
	d.Notify(Event{Kind: KindRunFailed, Env: "prod"})
	<-hung
	timers.fire(t, opts.AttemptTimeout) // the first attempt's
	rec.waitFor(t, "will retry", "attempt=1", "error=no answer within 7s")
	timers.fire(t, opts.Backoff)
	rcv.wait(t, 2)
	closeNow(t, d)
	if got := rcv.seen(); len(got) != 2 || !slices.Contains(got, "prod#1:200") {
		t.Fatalf("receiver saw %q, want a hung attempt and prod#1:200", got)
	}
}

func TestDownReceiverDelaysNoOtherSink(t *testing.T) {
	up := newReceiver(t, nil)
	rec := newLogRecorder()
	opts := fastOptions(rec)
	// After its first refused attempt the down sink waits an hour, so it is
	// certainly still retrying while the other sink delivers.
	opts.Backoff, opts.MaxBackoff = time.Hour, time.Hour
	d, err := New([]Sink{
		{Name: "down", Kind: SinkWebhook, URL: downURL(t), Secret: "k"},
		{Name: "up", Kind: SinkWebhook, URL: up.URL, Secret: "k"},
	}, opts)
	if err != nil {
		t.Fatal(err)
	}

	// Notify returns while the down sink is failing: the test would hang
	// here otherwise.
	for range 3 {
		d.Notify(Event{Kind: KindRunFailed, Env: "prod"})
	}
	rec.waitFor(t, "will retry", "sink=down", "seq=1", "attempt=1")
	for i := range 3 {
		if h := up.next(t); h.seq != uint64(i+1) {
			t.Fatalf("up sink got seq %d, want %d", h.seq, i+1)
		}
	}
	if strings.Contains(rec.text(), "giving up") {
		t.Fatalf("down sink gave up instead of retrying:\n%s", rec.text())
	}

	// Close cannot wait an hour: it abandons the down sink's three events.
	// (The up sink's last response may be cut off too, hence counting the
	// down sink's events in the log.)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := d.Close(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("Close = %v, want context.Canceled", err)
	}
	abandoned := 0
	for _, line := range strings.Split(rec.text(), "\n") {
		if _, n, ok := strings.Cut(line, "abandoning undelivered events at close sink=down env=prod events="); ok {
			k, _ := strconv.Atoi(n)
			abandoned += k
		}
	}
	if abandoned != 3 {
		t.Fatalf("down sink abandoned %d events at Close, want 3:\n%s", abandoned, rec.text())
	}
	if err := d.Close(context.Background()); err == nil {
		t.Fatal("a second Close forgot the abandoned events")
	}
}

func TestEnvironmentsProceedIndependently(t *testing.T) {
	release := make(chan struct{})
	rcv := newReceiver(t, func(h hit, _ int) int {
		if h.env == "stuck" {
			<-release
		}
		return 200
	})
	t.Cleanup(func() {
		select {
		case <-release:
		default:
			close(release)
		}
	})
	d := newDispatcher(t, []Sink{{Name: "ops", Kind: SinkWebhook, URL: rcv.URL, Secret: "k"}}, fastOptions(newLogRecorder()))
	d.Notify(Event{Kind: KindRunFailed, Env: "stuck"})
	for range 3 {
		d.Notify(Event{Kind: KindRunFailed, Env: "free"})
	}
	for i := range 3 {
		if h := rcv.next(t); h.env != "free" || h.seq != uint64(i+1) {
			t.Fatalf("got %s#%d while stuck is blocked, want free#%d", h.env, h.seq, i+1)
		}
	}
	close(release)
	if h := rcv.next(t); h.env != "stuck" {
		t.Fatalf("got %s#%d, want the stuck event once released", h.env, h.seq)
	}
}

func TestFullQueueDropsOldest(t *testing.T) {
	release := make(chan struct{})
	rcv := newReceiver(t, func(_ hit, n int) int {
		if n == 0 {
			<-release // hold the first event in flight
		}
		return 200
	})
	rec := newLogRecorder()
	opts := fastOptions(rec)
	opts.QueueSize = 3
	d := newDispatcher(t, []Sink{{Name: "ops", Kind: SinkWebhook, URL: rcv.URL, Secret: "k"}}, opts)

	d.Notify(Event{Kind: KindDriftFound, Env: "prod"})
	// Wait until event 1 is in flight, so the queue is empty behind it.
	waitInFlight(t, d)
	for range 5 {
		d.Notify(Event{Kind: KindDriftFound, Env: "prod"}) // 2..6; 2 and 3 are dropped
	}
	close(release)
	closeNow(t, d)
	if got, want := rcv.seen(), []string{"prod#1:200", "prod#4:200", "prod#5:200", "prod#6:200"}; !slices.Equal(got, want) {
		t.Fatalf("receiver saw %q, want %q", got, want)
	}
	for _, seq := range []string{"seq=2", "seq=3"} {
		if !strings.Contains(rec.text(), "queue full, dropping oldest event sink=ops env=prod kind=drift.found "+seq) {
			t.Errorf("no warning for dropping %s:\n%s", seq, rec.text())
		}
	}
}

// waitInFlight waits until every queue has handed its events to a worker.
func waitInFlight(t *testing.T, d *Dispatcher) {
	t.Helper()
	deadline := time.Now().Add(hangGuard)
	for {
		d.mu.Lock()
		waiting := 0
		for _, q := range d.queues {
			waiting += len(q.items)
		}
		d.mu.Unlock()
		if waiting == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("events never left the queue")
		}
		time.Sleep(time.Millisecond)
	}
}

func TestCloseDeliversQueuedEvents(t *testing.T) {
	rcv := newReceiver(t, nil)
	rec := newLogRecorder()
	d := newDispatcher(t, []Sink{{Name: "ops", Kind: SinkWebhook, URL: rcv.URL, Secret: "k"}}, fastOptions(rec))
	for _, env := range []string{"a", "b", "a", "b", "a", "b"} {
		d.Notify(Event{Kind: KindRunSucceeded, Env: env})
	}
	closeNow(t, d)
	delivered := 0
	for _, s := range rcv.seen() {
		if strings.HasSuffix(s, ":200") {
			delivered++
		}
	}
	if delivered != 6 {
		t.Fatalf("delivered %d of 6 events by the time Close returned: %q", delivered, rcv.seen())
	}

	d.Notify(Event{Kind: KindRunFailed, Env: "a"})
	if len(rcv.seen()) != 6 || !strings.Contains(rec.text(), "after Close") {
		t.Fatalf("an event notified after Close was not dropped with a warning: %q\n%s", rcv.seen(), rec.text())
	}
	// Nothing is left, so even an expired context closes cleanly.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := d.Close(ctx); err != nil {
		t.Fatalf("second Close = %v", err)
	}
}

// TestCloseFlushesOnceWithoutBackoff: an event waiting an hour for its
// retry gets its last attempt at Close at once, and the one behind it
// follows; Close does not wait out the backoff.
func TestCloseFlushesOnceWithoutBackoff(t *testing.T) {
	rcv := newReceiver(t, func(_ hit, n int) int {
		return []int{503, 200}[min(n, 1)]
	})
	rec := newLogRecorder()
	opts := fastOptions(rec)
	opts.Backoff, opts.MaxBackoff = time.Hour, time.Hour
	d := newDispatcher(t, []Sink{{Name: "ops", Kind: SinkWebhook, URL: rcv.URL, Secret: "k"}}, opts)
	d.Notify(Event{Kind: KindRunFailed, Env: "prod"})
	d.Notify(Event{Kind: KindRunSucceeded, Env: "prod"})
	rec.waitFor(t, "will retry", "seq=1", "wait=1h0m0s")
	closeNow(t, d)
	if got, want := rcv.seen(), []string{"prod#1:503", "prod#1:200", "prod#2:200"}; !slices.Equal(got, want) {
		t.Fatalf("receiver saw %q, want %q", got, want)
	}
}

// TestCloseKeepsWhatAHangingReceiverHolds: the flush at Close is bounded
// (its timer fires here when the test says), a failed last attempt is not
// retried, the undelivered events stay in the outbox, and the next
// Dispatcher on that outbox sends them first, in order, with their numbers;
// numbering then goes on.
func TestCloseKeepsWhatAHangingReceiverHolds(t *testing.T) {
	hung := make(chan struct{}, 1)
	hanging := newReceiver(t, func(h hit, _ int) int {
		hung <- struct{}{}
		<-h.ctx.Done()
		return 200
	})
	box := &memOutbox{}
	rec := newLogRecorder()
	opts := fastOptions(rec)
	opts.Client = &http.Client{}
	timers := newFakeTimers()
	opts.AfterFunc, opts.Outbox, opts.FlushTimeout = timers.AfterFunc, box, 3*time.Second
	d, err := New([]Sink{{Name: "ops", Kind: SinkWebhook, URL: hanging.URL, Secret: "k"}}, opts)
	if err != nil {
		t.Fatal(err)
	}
	d.Notify(Event{Kind: KindRunFailed, Env: "prod", Summary: "first"})
	d.Notify(Event{Kind: KindRunSucceeded, Env: "prod", Summary: "second"})
	<-hung
	closed := make(chan error, 1)
	go func() { closed <- d.Close(context.Background()) }()
	timers.waitFor(t, opts.FlushTimeout)
	timers.fire(t, opts.FlushTimeout)
	select {
	case err := <-closed:
		if err != nil {
			t.Fatalf("Close = %v, want nil: the events are kept", err)
		}
	case <-time.After(hangGuard):
		t.Fatal("Close did not return once the flush was over")
	}
	if n := len(box.pending()); n != 2 {
		t.Fatalf("outbox keeps %d events, want 2", n)
	}
	rec.waitFor(t, "keeping undelivered events", "events=2")

	working := newReceiver(t, nil)
	opts2 := fastOptions(newLogRecorder())
	opts2.Outbox = box
	d2 := newDispatcher(t, []Sink{{Name: "ops", Kind: SinkWebhook, URL: working.URL, Secret: "k"}}, opts2)
	d2.Notify(Event{Kind: KindDriftFound, Env: "prod", Summary: "third"})
	working.wait(t, 3)
	closeNow(t, d2)
	var got []string
	for _, h := range working.all {
		var b struct{ Summary string }
		_ = json.Unmarshal(h.body, &b)
		got = append(got, fmt.Sprintf("%s#%d", b.Summary, h.seq))
	}
	if want := []string{"first#1", "second#2", "third#3"}; !slices.Equal(got, want) {
		t.Fatalf("after the restart the receiver got %q, want %q", got, want)
	}
	if n := len(box.pending()); n != 0 {
		t.Fatalf("outbox keeps %d delivered events", n)
	}
}

func TestUnknownKindIsDropped(t *testing.T) {
	rcv := newReceiver(t, nil)
	rec := newLogRecorder()
	d := newDispatcher(t, []Sink{{Name: "ops", Kind: SinkWebhook, URL: rcv.URL, Secret: "k"}}, fastOptions(rec))
	d.Notify(Event{Kind: "run-exploded", Env: "prod"})
	d.Notify(Event{Kind: KindRunFailed, Env: "prod"})
	closeNow(t, d)
	if got, want := rcv.seen(), []string{"prod#1:200"}; !slices.Equal(got, want) {
		t.Fatalf("receiver saw %q, want %q", got, want)
	}
	if !strings.Contains(rec.text(), "unknown kind kind=run-exploded") {
		t.Errorf("unknown kind not logged:\n%s", rec.text())
	}
}

func TestLogsHoldNoSecrets(t *testing.T) {
	rec := newLogRecorder()
	opts := fastOptions(rec)
	opts.MaxAttempts = 2
	url := strings.Replace(downURL(t), "http://", "http://user:PASSWORD@", 1) + "/T0/PATHTOKEN?token=QUERYTOKEN"
	sink := Sink{Name: "ops", Kind: SinkWebhook, URL: url, Secret: "HMACSECRET"}
	d := newDispatcher(t, []Sink{sink}, opts)
	d.Notify(Event{Kind: KindRunFailed, Env: "prod"})
	rec.waitFor(t, "giving up", "sink=ops", "error=Post: ")
	d.opts.Logger.Info("sink", "sink", sink)
	for _, secret := range []string{"PASSWORD", "PATHTOKEN", "QUERYTOKEN", "HMACSECRET"} {
		if strings.Contains(rec.text(), secret) {
			t.Errorf("logs contain %s:\n%s", secret, rec.text())
		}
	}
	if !strings.Contains(rec.text(), "host=127.0.0.1:") {
		t.Errorf("logs do not name the host:\n%s", rec.text())
	}
}

func TestBackoffDoublesUpToTheCap(t *testing.T) {
	d, err := New(nil, Options{})
	if err != nil {
		t.Fatal(err)
	}
	var got []time.Duration
	for attempt := 1; attempt <= 8; attempt++ {
		got = append(got, d.backoff(attempt))
	}
	s := time.Second
	want := []time.Duration{s, 2 * s, 4 * s, 8 * s, 16 * s, 32 * s, time.Minute, time.Minute}
	if !slices.Equal(got, want) {
		t.Fatalf("default backoff = %v, want %v", got, want)
	}
	if d.opts.MaxAttempts != 5 || d.opts.QueueSize != 100 {
		t.Errorf("defaults: MaxAttempts %d, QueueSize %d; want 5, 100", d.opts.MaxAttempts, d.opts.QueueSize)
	}
}

func TestSignMatchesGitHubStyle(t *testing.T) {
	// Known answer: HMAC-SHA256("It's a Secret to Everybody", "Hello, World!"),
	// the example in GitHub's webhook documentation.
	got := Sign("It's a Secret to Everybody", []byte("Hello, World!"))
	if want := "sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17"; got != want {
		t.Fatalf("Sign = %s, want %s", got, want)
	}
}
