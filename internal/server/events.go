package server

import (
	"context"
	"encoding/json"
	"net/http"
	"strconv"

	"knit.dev/knit/internal/engine"
	"knit.dev/knit/internal/sse"
)

// runEvents streams a run's events as server-sent events: what the run
// recorded so far, then live ones, in order, until it finishes. Each event's
// id is its sequence number, so a client that reconnects with
// Last-Event-ID misses nothing.
func (s *Server) runEvents(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	v, j, err := s.lookupRun(r, id)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	var after int64
	if last := r.Header.Get("Last-Event-ID"); last != "" {
		if after, err = strconv.ParseInt(last, 10, 64); err != nil || after < 0 {
			s.fail(w, r, badReq("Last-Event-ID must be the id of an event of this run"))
			return
		}
	}
	st, err := sse.Open(w, s.cfg.HTTP.WriteTimeout)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	src := &apiEvents{s: s, r: r, id: id, after: after, view: v}
	var o sse.Options
	if j != nil {
		src.started, o.Started = j.Started(), j.Started()
	}
	sse.Follow(r.Context(), st, src, o)
}

// apiEvents is one run's event stream as the API encodes it: each event's
// JSON, named by its kind.
type apiEvents struct {
	s       *Server
	r       *http.Request
	id      string
	after   int64
	view    runView         // the run as the request found it
	started <-chan struct{} // the queued job's, nil when not queued here
}

// Find is the run live in this process, or queued, or else its record.
func (a *apiEvents) Find(ctx context.Context) sse.Found[engine.Event] {
	if a.started != nil {
		select {
		case <-a.started:
		default:
			return sse.Found[engine.Event]{Queued: true}
		}
	}
	if run, live := a.s.k.Lookup(a.id); live {
		return sse.Found[engine.Event]{Events: run.Subscribe(a.after).Channel(ctx)}
	}
	if a.s.cfg.Remote != nil {
		if events, live := a.s.cfg.Remote.Follow(ctx, a.id, a.after); live {
			return sse.Found[engine.Event]{Events: events}
		}
	}
	// Finished long ago, refused, or another process's: its record (or
	// the queue's) says how it ended.
	v := a.view
	if now, _, err := a.s.lookupRun(a.r.WithContext(ctx), a.id); err == nil {
		v = now
	}
	msgs, _ := a.Encode(engine.Event{Seq: a.after + 1, Kind: engine.RunFinished, Time: v.FinishedAt, Env: v.Env, RunID: a.id,
		RunKind: v.Kind, RunStatus: v.Status, Error: v.Error})
	return sse.Found[engine.Event]{Record: msgs}
}

// Encode is the event's JSON; the run's end is the stream's.
func (a *apiEvents) Encode(ev engine.Event) ([]sse.Message, bool) {
	data, _ := json.Marshal(ev)
	return []sse.Message{{ID: ev.Seq, Event: string(ev.Kind), Data: string(data)}}, ev.Kind == engine.RunFinished
}
