package web

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"knit.dev/knit/internal/engine"
	"knit.dev/knit/internal/knit"
	"knit.dev/knit/internal/spec"
	"knit.dev/knit/internal/sse"
	"knit.dev/knit/internal/store"
	"knit.dev/knit/internal/view"
)

// compSection is one component's part of a run page.
type compSection struct {
	Name, Status, Why string
	Tone              Tone
	Busy              bool
	Log               string
}

type runPage struct {
	ID     string
	Run    view.Run
	Known  bool // recorded or live; false while queued
	Live   bool // events stream in
	Tone   Tone
	Comps  []compSection
	Events string
	Status statusFrag
	Commit *commit // the git commit the run applied, if any
	// Policy is what the environment's policies decided about the run's
	// plan, when it was judged.
	Policy *engine.Verdict
}

// runLogLines is how much of each component's log a finished run shows.
const runLogLines = 400

// run is one run: every component's status and log, live while it runs.
// A run nobody knows (not recorded, not live, not queued) is a 404.
func (w *Web) run(rw http.ResponseWriter, r *http.Request, s *session) {
	id := r.PathValue("id")
	p := runPage{ID: id, Events: "/runs/" + id + "/events", Tone: ToneBusy}
	f, err := w.lookup(r.Context(), id)
	if err != nil {
		w.errorPage(rw, r, s, 0, err)
		return
	}
	var rec knit.RunView
	isLive := f.Live != nil
	switch {
	case f.Record != nil:
		rec = *f.Record
		p.Run, p.Known = rec.Run, true
	case isLive:
		p.Run, p.Known = view.Run{ID: id, Env: f.Live.Env, Kind: f.Live.Kind, Status: store.StatusRunning}, true
	default:
		p.Run = view.Run{ID: id, Env: f.Env, Status: store.StatusQueued}
	}
	// ?live=0 shows the run as recorded so far, without its stream.
	p.Live = !liveOff(r) && (!p.Known || (isLive && p.Run.Status == store.StatusRunning) || p.Run.Status == store.StatusRunning)
	if !p.Live {
		p.Tone = toneOf(p.Run.Status)
		for _, cr := range rec.Components {
			p.Comps = append(p.Comps, compSection{Name: cr.Component, Status: cr.Status, Why: cr.Reason,
				Tone: toneOf(cr.Status), Log: tail(cr.Log, runLogLines)})
		}
	}
	if len(p.Run.Policy) > 0 {
		p.Policy = &engine.Verdict{}
		if err := json.Unmarshal(p.Run.Policy, p.Policy); err != nil {
			w.errorPage(rw, r, s, 0, fmt.Errorf("run %s: its policy decisions are unreadable: %w", id, err))
			return
		}
	}
	p.Status = runStatus(p.Run.Status, p.Run.Error)
	if p.Commit, err = w.commitOf(r.Context(), p.Run.Env, nil, p.Run.Revision); err != nil {
		w.errorPage(rw, r, s, 0, err)
		return
	}
	title := "Run " + id
	w.render(rw, r, s, http.StatusOK, "run", title, "", p)
}

// runEvents streams a run's events as HTML fragments that htmx swaps in
// out of band: a section per component, its status, its log lines, and
// the run's end. It waits for a queued run to start; a run nobody knows
// is a 404 at once.
func (w *Web) runEvents(rw http.ResponseWriter, r *http.Request, s *session) {
	id := r.PathValue("id")
	// A stream resumes after the last event its page saw: the browser's
	// reconnection says so in Last-Event-ID, a page shown again from the
	// back/forward cache (which closed its stream) in ?after=.
	var after int64
	v := r.Header.Get("Last-Event-ID")
	if v == "" {
		v = r.URL.Query().Get("after")
	}
	if v != "" {
		after, _ = strconv.ParseInt(v, 10, 64)
		after = max(after, 0) // a hostile -5 reads from the start
	}
	run, rec, err := w.findRun(r.Context(), id)
	if err != nil {
		http.Error(rw, err.Error(), statusOf(err))
		return
	}
	st, err := w.live.openStream(rw)
	if err != nil {
		http.Error(rw, err.Error(), http.StatusInternalServerError)
		return
	}
	src := &runFragments{w: w, s: s, id: id, after: after, run: run, rec: rec, seen: map[string]bool{}}
	sse.Follow(r.Context(), st, src, sse.Options{Poll: w.opts.PollInterval, MaxWait: 30 * time.Minute})
}

// runFragments is one run's event stream as the dashboard encodes it:
// each event as fragments ("ev"), then "done" at the run's end.
type runFragments struct {
	w      *Web
	s      *session
	id     string
	after  int64
	run    *engine.Run     // live, as last found
	rec    *knit.RunView   // recorded, as last found
	looked bool            // run and rec are from an earlier Find
	seen   map[string]bool // components with a section
}

// done is the message that tells the page the stream is over.
var done = sse.Message{Event: "done", Data: "done"}

// Find is the run live in this process, or waiting in the queue, or else
// its record; the first look is the request's own.
func (f *runFragments) Find(ctx context.Context) sse.Found[engine.Event] {
	if f.looked {
		var err error
		if f.run, f.rec, err = f.w.findRun(ctx, f.id); err != nil {
			return sse.Found[engine.Event]{Record: []sse.Message{done}}
		}
	}
	f.looked = true
	switch {
	case f.run != nil:
		if canSee(f.s, spec.TeamOf(f.run.Env)) != nil {
			return sse.Found[engine.Event]{Record: []sse.Message{done}}
		}
		return sse.Found[engine.Event]{Events: f.run.Subscribe(f.after).Channel(ctx)}
	case f.rec != nil && f.rec.Status != store.StatusRunning:
		// Finished and forgotten (or another process's): say how it ended.
		end := sse.Message{ID: f.after + 2, Event: "done", Data: "done"}
		if canSee(f.s, spec.TeamOf(f.rec.Env)) != nil {
			return sse.Found[engine.Event]{Record: []sse.Message{end}}
		}
		status := sse.Message{ID: f.after + 1, Event: "ev", Data: f.w.fragment("runstatusoob", runStatus(f.rec.Status, f.rec.Error))}
		return sse.Found[engine.Event]{Record: []sse.Message{status, end}}
	case f.rec != nil && f.w.opts.Remote != nil && canSee(f.s, spec.TeamOf(f.rec.Env)) == nil:
		// Recorded running, not here: another replica executes it.
		if events, ok := f.w.opts.Remote.Follow(ctx, f.id, f.after); ok {
			return sse.Found[engine.Event]{Events: events}
		}
	}
	return sse.Found[engine.Event]{Queued: true}
}

// Encode is the event's fragments; the run's end (or the live view
// falling behind) ends the stream.
func (f *runFragments) Encode(ev engine.Event) ([]sse.Message, bool) {
	msg := sse.Message{ID: ev.Seq, Event: "ev", Data: f.w.eventHTML(ev, f.seen, f.after > 0)}
	if ev.Kind == engine.RunFinished || ev.Kind == engine.Dropped {
		return []sse.Message{msg, done}, true
	}
	return []sse.Message{msg}, false
}

// findRun looks for run id: live in this process, recorded, or waiting in
// the server's queue (all nil then). Any other ID is ErrNotFound.
func (w *Web) findRun(ctx context.Context, id string) (*engine.Run, *knit.RunView, error) {
	f, err := w.lookup(ctx, id)
	if err != nil {
		return nil, nil, err
	}
	if f.Live != nil {
		return f.Live, nil, nil
	}
	return nil, f.Record, nil
}

// lookup is knit.FindRun over the server's queue. A run of a team the
// session may not see is, for the dashboard, a run it does not know (its
// page and its stream are a 404 that says no more than for an unknown
// ID).
func (w *Web) lookup(ctx context.Context, id string) (knit.FoundRun, error) {
	f, err := w.k.FindRun(ctx, id, func(id string) (knit.QueuedRun, bool) {
		if w.opts.Runs == nil {
			return knit.QueuedRun{}, false
		}
		env, ok := w.opts.Runs.Queued(id)
		return knit.QueuedRun{Env: env}, ok
	})
	if errors.Is(err, knit.ErrForbidden) {
		return f, fmt.Errorf("%w: no run %s (the environment's page lists its runs)", knit.ErrNotFound, id)
	}
	return f, err
}

type statusFrag struct {
	Text string
	Tone Tone
	Busy bool
}

func runStatus(status store.RunStatus, errText string) statusFrag {
	text := "run " + string(status)
	if errText != "" {
		text += ": " + errText
	}
	return statusFrag{Text: text, Tone: toneOf(status), Busy: busy(status)}
}

// eventHTML is one event as out-of-band fragments. resumed: the client
// has the sections of components seen before it reconnected.
func (w *Web) eventHTML(ev engine.Event, seen map[string]bool, resumed bool) string {
	var b bytes.Buffer
	if ev.Component != "" && !seen[ev.Component] {
		seen[ev.Component] = true
		if !resumed {
			b.WriteString(w.fragment("newsection", compSection{Name: ev.Component, Status: string(engine.Pending), Tone: ToneNeutral}))
		}
	}
	switch ev.Kind {
	case engine.RunStarted:
		b.WriteString(w.fragment("runstatusoob", runStatus(store.StatusRunning, "")))
	case engine.ComponentStatus:
		st := string(ev.Status)
		c := compSection{Name: ev.Component, Status: st, Tone: toneOf(st), Busy: busy(st)}
		if c.Tone != ToneOK && c.Tone != ToneBusy {
			c.Why = ev.Reason
		}
		b.WriteString(w.fragment("compstatus", c))
	case engine.PolicyDecision:
		// A decision appears as it is made, as the recorded page lists it.
		if ev.Decision != nil {
			b.WriteString(w.fragment("newdecision", *ev.Decision))
		}
	case engine.LogLine:
		b.WriteString(w.fragment("logline", compSection{Name: ev.Component, Log: ev.Line}))
	case engine.RunFinished:
		b.WriteString(w.fragment("runstatusoob", runStatus(ev.RunStatus, ev.Error)))
	case engine.Dropped:
		b.WriteString(w.fragment("runstatusoob", statusFrag{Text: "the live view fell behind: reload for the full record", Tone: ToneWait}))
	}
	return b.String()
}
