package web

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"time"

	"knit.dev/knit/internal/engine"
	"knit.dev/knit/internal/knit"
	"knit.dev/knit/internal/sse"
	"knit.dev/knit/internal/store"
)

// live is the dashboard's live views: event streams that tell a page to
// refresh when what it shows changes.
type live struct {
	k            *knit.Knit
	poll         time.Duration // how often to look for a new run
	writeTimeout time.Duration // bounds each write of a stream (0: none)
	envRef       func(*http.Request, *session) (string, error)
}

// openStream starts a live view's event stream.
func (w *live) openStream(rw http.ResponseWriter) (*sse.Stream, error) {
	return sse.Open(rw, w.writeTimeout)
}

// env tells an environment's page to refresh ("changed") whenever one
// of its runs moves a component, starts or ends: it follows the event
// stream of the run holding the environment's lock, and between runs
// looks for a new one every PollInterval.
func (w *live) env(rw http.ResponseWriter, r *http.Request, s *session) {
	id, err := w.envRef(r, s)
	if err != nil {
		http.Error(rw, err.Error(), statusOf(err))
		return
	}
	w.stream(rw, r, func(ctx context.Context) (string, string) {
		runID, err := knit.NewRecords(w.k).LockHolder(ctx, id)
		if err != nil {
			return "", "?" // unreadable now: the next look tells
		}
		return runID, w.envMark(ctx, id)
	})
}

// all tells the environments list to refresh when any run starts or ends.
func (w *live) all(rw http.ResponseWriter, r *http.Request, _ *session) {
	w.stream(rw, r, func(ctx context.Context) (string, string) {
		return "", w.allMark(ctx)
	})
}

// stream opens a live view's event stream and watches look on it until
// the browser goes.
func (w *live) stream(rw http.ResponseWriter, r *http.Request, look func(ctx context.Context) (runID, mark string)) {
	st, err := w.openStream(rw)
	if err != nil {
		http.Error(rw, err.Error(), http.StatusInternalServerError)
		return
	}
	w.watch(r.Context(), st, r.URL.Query().Get("since"), look)
}

// watch sends "changed" when look's mark moves away from since (the mark
// the page was rendered with: what changed between the page's rendering
// and this stream's start counts too), and while look names a live run, on
// each of that run's component and run events (at most one "changed" per
// quarter second).
func (w *live) watch(ctx context.Context, st *sse.Stream, since string, look func(ctx context.Context) (runID, mark string)) {
	tick := time.NewTicker(w.poll)
	defer tick.Stop()
	idle := time.NewTicker(sse.KeepAlive)
	defer idle.Stop()
	last := since
	if last == "" {
		_, last = look(ctx)
	}
	n := int64(0)
	changed := func() { n++; _ = st.Send(n, "changed", "changed") } // a failed write ends ctx
	for {
		runID, mark := look(ctx)
		if mark != last {
			last = mark
			changed()
		}
		if run, ok := w.k.Lookup(runID); runID != "" && ok {
			w.follow(ctx, run, changed)
			_, last = look(ctx)
			changed()
		}
		select {
		case <-ctx.Done():
			return
		case <-idle.C:
			if st.Comment("keep-alive") != nil {
				return
			}
		case <-tick.C:
		}
	}
}

// follow calls changed for a run's events (coalesced) until it finishes.
func (w *live) follow(ctx context.Context, run *engine.Run, changed func()) {
	events := run.Subscribe(0).Channel(ctx)
	flush := time.NewTicker(250 * time.Millisecond)
	defer flush.Stop()
	dirty := false
	for {
		select {
		case ev, ok := <-events:
			if !ok {
				return
			}
			if ev.Kind != engine.LogLine {
				dirty = true
			}
		case <-flush.C:
			if dirty {
				dirty = false
				changed()
			}
		case <-ctx.Done():
			return
		}
	}
}

// envMark changes whenever the environment's record, version, lock or newest run does.
func (w *live) envMark(ctx context.Context, id string) string {
	e, err := knit.NewRecords(w.k).EnvironmentRecord(ctx, id)
	if err != nil {
		return "?"
	}
	// The version moves with whatever else the page shows (a health
	// check recorded by another process, say).
	version, err := knit.NewRecords(w.k).EnvironmentVersion(ctx, id)
	if err != nil {
		return "?"
	}
	mark := fmt.Sprintf("%s|%d|%d|%s|v%d", e.Status, e.Revision, e.AppliedRevision, e.UpdatedAt, version)
	last, err := knit.NewRecords(w.k).LastRun(ctx, id)
	if err != nil {
		return "?"
	}
	if last != nil {
		mark += "|" + last.ID + "|" + string(last.Status)
	}
	holder, err := knit.NewRecords(w.k).LockHolder(ctx, id)
	if err != nil {
		return "?"
	}
	if holder != "" {
		mark += "|locked by " + holder
	}
	return digest(mark + w.rolloutMark(ctx, id))
}

// digest keeps marks short enough for a URL.
func digest(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:8])
}

// allMark changes whenever any run starts or ends.
func (w *live) allMark(ctx context.Context) string {
	last, err := knit.NewRecords(w.k).LastRun(ctx, "")
	if err != nil {
		return "?"
	}
	mark := ""
	if last != nil {
		mark = last.ID + "|" + string(last.Status)
	}
	running, err := knit.NewRecords(w.k).CountRuns(ctx, store.StatusRunning)
	if err != nil {
		return "?"
	}
	return digest(mark + fmt.Sprintf("|%d", running))
}
