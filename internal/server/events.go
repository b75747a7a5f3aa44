package server

import (
	"encoding/json"
	"net/http"
	"strconv"
	"time"

	"knit.dev/knit/internal/engine"
	"knit.dev/knit/internal/sse"
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
	st, err := sse.Open(w, s.cfg.HTTP.WriteTimeout)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	tick := time.NewTicker(keepAlive)
	defer tick.Stop()
	if j != nil { // queued: wait for it to start
		for waiting := true; waiting; {
			select {
			case <-j.Started():
				waiting = false
			case <-tick.C:
				if st.Comment("queued") != nil {
					return
				}
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
		_ = writeEvent(st, engine.Event{Seq: after + 1, Kind: engine.RunFinished, Time: v.FinishedAt, Env: v.Env, RunID: id,
			RunKind: v.Kind, RunStatus: v.Status, Error: v.Error})
		return
	}
	events := run.Subscribe(after).Channel(r.Context())
	for {
		select {
		case ev, ok := <-events:
			if !ok || writeEvent(st, ev) != nil {
				return
			}
		case <-tick.C:
			if st.Comment("keep-alive") != nil {
				return
			}
		case <-r.Context().Done():
			return
		}
	}
}

func writeEvent(st *sse.Stream, ev engine.Event) error {
	data, _ := json.Marshal(ev)
	return st.Send(ev.Seq, string(ev.Kind), string(data))
}
