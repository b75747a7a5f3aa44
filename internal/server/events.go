package server

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"knit.dev/knit/internal/engine"
)

// keepAlive is how often an idle event stream gets a comment, so proxies
// and clients keep the connection.
const keepAlive = 15 * time.Second

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
	flusher, ok := w.(http.Flusher)
	if !ok {
		s.fail(w, r, fmt.Errorf("streaming is not supported by this connection"))
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.Header().Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	flusher.Flush()
	tick := time.NewTicker(keepAlive)
	defer tick.Stop()
	if j != nil { // queued: wait for it to start
		for waiting := true; waiting; {
			select {
			case <-j.started:
				waiting = false
			case <-tick.C:
				fmt.Fprint(w, ": queued\n\n")
				flusher.Flush()
			case <-r.Context().Done():
				return
			}
		}
	}
	run, live := s.k.Lookup(id)
	if !live {
		// Finished long ago, or another process's: its record says how it ended.
		if rec, err := s.k.RunRecord(r.Context(), id); err == nil {
			v.Run = rec.Run
		}
		writeEvent(w, engine.Event{Seq: after + 1, Kind: engine.RunFinished, Time: v.FinishedAt, Env: v.Env, RunID: id,
			RunKind: v.Kind, RunStatus: v.Status, Error: v.Error})
		flusher.Flush()
		return
	}
	events := run.Subscribe(after).Channel(r.Context())
	for {
		select {
		case ev, ok := <-events:
			if !ok {
				return
			}
			writeEvent(w, ev)
			flusher.Flush()
		case <-tick.C:
			fmt.Fprint(w, ": keep-alive\n\n")
			flusher.Flush()
		case <-r.Context().Done():
			return
		}
	}
}

func writeEvent(w http.ResponseWriter, ev engine.Event) {
	data, _ := json.Marshal(ev)
	fmt.Fprintf(w, "id: %d\nevent: %s\ndata: %s\n\n", ev.Seq, ev.Kind, data)
}
