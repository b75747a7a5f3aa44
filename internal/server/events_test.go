package server_test

import (
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"knit.dev/knit/internal/engine"
)

// TestEventsReachALateSubscriberInOrderAndResume holds a run mid-way: a
// client that connects then gets what the run did so far, then live events,
// numbered 1..N without gaps, until run-finished; one that resumes with
// Last-Event-ID gets exactly what follows.
func TestEventsReachALateSubscriberInOrderAndResume(t *testing.T) {
	h := newHarness(t)
	viewer := h.token("watcher", "viewer")
	op := h.token("ci", "operator")
	h.seed("pay", "prod", envOpts{}, "seed")

	// A plan of pay/prod stops in prod-app's plan, after prod-db's.
	runID, held := h.heldRun("pay/prod", "plan", "plan", "prod-app", op)
	events := "/api/v1/runs/" + runID + "/events"

	// A: connects mid-run and reads what happened before it came.
	a := h.stream(call{method: "GET", path: events, token: viewer})
	var before []sseEvent
	for {
		ev, ok := a.next(t)
		if !ok {
			t.Fatalf("the stream ended while the run was held, after %+v", before)
		}
		before = append(before, ev)
		if e := eventData(t, ev); e.Component == "prod-app" && e.Status == engine.Planning {
			break // the last thing the run did before it was held
		}
	}
	if first := eventData(t, before[0]); first.Kind != engine.RunStarted || first.RunID != runID || first.Env != "pay/prod" {
		t.Fatalf("first event %+v", first)
	}
	k := before[len(before)-1].ID
	// B: resumes mid-run after event 2.
	b := h.stream(call{method: "GET", path: events, token: viewer, header: http.Header{"Last-Event-Id": {"2"}}})

	held.Release()
	all := append(before, a.rest(h)...)
	for i, ev := range all {
		if ev.ID != int64(i+1) {
			t.Fatalf("event %d has id %d: ids must run 1..N without gaps", i+1, ev.ID)
		}
		e := eventData(t, ev)
		if e.Seq != ev.ID || string(e.Kind) != ev.Event || e.RunID != runID {
			t.Fatalf("event %d: id %d, event %q, data %s", i+1, ev.ID, ev.Event, ev.Data)
		}
	}
	n := int64(len(all))
	if n <= k {
		t.Fatalf("no live event after the release: %d events, %d before", n, k)
	}
	last := eventData(t, all[n-1])
	if last.Kind != engine.RunFinished || last.RunStatus != "succeeded" {
		t.Fatalf("last event %+v", last)
	}
	var sawPlanned bool
	for _, ev := range all[k:] {
		e := eventData(t, ev)
		sawPlanned = sawPlanned || (e.Component == "prod-app" && e.Kind == engine.ComponentStatus && e.Status == engine.NoChanges)
	}
	if !sawPlanned {
		t.Fatalf("no live event of prod-app's plan after the release: %s", dump(all[k:]))
	}

	sameAs := func(name string, got []sseEvent, from int64) {
		t.Helper()
		if int64(len(got)) != n-from {
			t.Fatalf("%s: %d events, want %d..%d: %s", name, len(got), from+1, n, dump(got))
		}
		for i, ev := range got {
			if want := all[from+int64(i)]; ev.ID != want.ID || ev.Event != want.Event || string(ev.Data) != string(want.Data) {
				t.Fatalf("%s: event %d is %+v, want %+v", name, i, ev, want)
			}
		}
	}
	sameAs("resumed mid-run after 2", b.rest(h), 2)
	// C: reconnects once the run is over, after the last event A saw while it was held.
	c := h.stream(call{method: "GET", path: events, token: viewer, header: http.Header{"Last-Event-Id": {strconv.FormatInt(k, 10)}}})
	sameAs("resumed after the run", c.rest(h), k)
}

// TestCancelInterruptsAHeldRun cancels a running run through the API: it
// ends interrupted, and its event stream says so.
func TestCancelInterruptsAHeldRun(t *testing.T) {
	h := newHarness(t)
	op := h.token("ci", "operator")
	h.seed("pay", "prod", envOpts{}, "seed")
	runID, _ := h.heldRun("pay/prod", "drift", "plan", "prod-db", op)
	s := h.stream(call{method: "GET", path: "/api/v1/runs/" + runID + "/events", token: op})
	var out struct{ RunID, Status string }
	h.do(call{method: "POST", path: "/api/v1/runs/" + runID + "/cancel", token: op}, 202).decode(t, &out)
	if out.RunID != runID || out.Status != "cancelling" {
		t.Fatalf("cancel: %+v", out)
	}
	evs := s.rest(h)
	if last := eventData(t, evs[len(evs)-1]); last.Kind != engine.RunFinished || last.RunStatus != "interrupted" {
		t.Fatalf("last event %+v", last)
	}
	if run := h.waitRun(runID, op); run["status"] != "interrupted" {
		t.Fatalf("run %+v", run)
	}
}

func dump(evs []sseEvent) string {
	b, _ := json.MarshalIndent(evs, "", " ")
	return string(b)
}

// TestAQueuedRunCancelledBeforeItStartsEndsItsStream: a run waiting in the
// queue behind a held one is cancelled while a client follows it: the
// stream ends with the run's end as the queue knows it (refused, with
// why), not as it was when the client came (queued).
func TestAQueuedRunCancelledBeforeItStartsEndsItsStream(t *testing.T) {
	h := newHarness(t)
	op := h.token("ci", "operator")
	h.seed("pay", "prod", envOpts{}, "seed")
	h.heldRun("pay/prod", "plan", "plan", "prod-app", op)
	var acc struct{ RunID, Status string }
	h.do(call{method: "POST", path: "/api/v1/environments/pay/prod/runs", token: op, body: map[string]any{"kind": "plan"}}, 202).decode(t, &acc)
	s := h.stream(call{method: "GET", path: "/api/v1/runs/" + acc.RunID + "/events", token: op})
	h.do(call{method: "POST", path: "/api/v1/runs/" + acc.RunID + "/cancel", token: op}, 202)
	evs := s.rest(h)
	if len(evs) != 1 {
		t.Fatalf("events: %s", dump(evs))
	}
	if last := eventData(t, evs[0]); last.Kind != engine.RunFinished || last.RunStatus != "refused" || !strings.Contains(last.Error, "cancelled") {
		t.Fatalf("the stream's end: %+v", last)
	}
}
