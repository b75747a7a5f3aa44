package web

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"knit.dev/knit/internal/fleet"
	"knit.dev/knit/internal/knit"
	"knit.dev/knit/internal/spec"
	"knit.dev/knit/internal/view"
)

// fleetPage is a set's rollout in waves as the fleet page shows it.
type fleetPage struct {
	ID       string
	Fleet    view.Fleet
	Waves    []fleetWave
	Selector string
	// Actions are the operator actions that apply now (fleet.Actions).
	Actions []string
	Live    string
	Self    string
}

// fleetWave is one wave with how many of its environments stand where.
type fleetWave struct {
	N       int
	Step    string
	Note    string
	State   string // done, current, next or skipped
	Counts  string
	Current bool
}

// fleets lists the sets with a rollout in waves the session may see.
func (w *Web) fleets(rw http.ResponseWriter, r *http.Request, s *session) {
	ids, err := knit.NewFleetReads(w.k).List(r.Context())
	if err != nil {
		w.errorPage(rw, r, s, 0, err)
		return
	}
	w.render(rw, r, s, http.StatusOK, "fleets", "Fleets", "fleets", ids)
}

// fleetRef is the set a fleet page names, when the session may see its team.
func fleetRef(r *http.Request, s *session) (string, error) {
	team := r.PathValue("team")
	if err := canSee(s, team); err != nil {
		return "", err
	}
	return team + "/" + r.PathValue("set"), nil
}

// fleet shows a set's rollout: its waves, each environment's release,
// health and wave (those ?selector= matches), why the next wave waits,
// and for operators the actions that apply now.
func (w *Web) fleet(rw http.ResponseWriter, r *http.Request, s *session) {
	id, err := fleetRef(r, s)
	if err != nil {
		w.errorPage(rw, r, s, 0, err)
		return
	}
	raw := strings.TrimSpace(r.URL.Query().Get("selector"))
	sel, err := spec.ParseSelector(raw)
	if err != nil {
		w.errorPage(rw, r, s, http.StatusBadRequest, err)
		return
	}
	mark := w.live.fleetMark(r.Context(), id)
	f, err := knit.NewFleetReads(w.k).Status(r.Context(), id, sel)
	if err != nil {
		w.errorPage(rw, r, s, 0, err)
		return
	}
	p := fleetPage{ID: id, Fleet: f, Selector: raw, Self: "/fleets/" + id}
	if raw != "" {
		p.Self += "?selector=" + url.QueryEscape(raw)
	}
	if f.Rollout != nil {
		p.Waves = waves(f.Rollout)
		if s.CanAct {
			p.Actions = actions(f.Rollout)
		}
	}
	if !liveOff(r) {
		p.Live = "/fleets/" + id + "/live?since=" + mark
	}
	w.render(rw, r, s, http.StatusOK, "fleet", "Fleet "+id, "fleets", p)
}

// waves are r's waves with where each stands and its environments' states.
func waves(r *view.WaveRollout) []fleetWave {
	out := make([]fleetWave, 0, len(r.Waves))
	for i, wv := range r.Waves {
		fw := fleetWave{N: i + 1, Step: wv.Step, Note: wv.Note}
		switch {
		case wv.Skipped:
			fw.State = "skipped"
		case i < r.Wave:
			fw.State = "done"
		case i == r.Wave && r.Status != view.FleetDone:
			fw.State, fw.Current = "current", true
		default:
			fw.State = "next"
		}
		counts := map[string]int{}
		for _, e := range r.Envs {
			if e.Wave == i {
				counts[e.State]++
			}
		}
		var parts []string
		for _, st := range []string{view.WaveEnvVerified, view.WaveEnvApplying, view.WaveEnvFailed, view.WaveEnvWaiting, view.WaveEnvSkipped} {
			if counts[st] > 0 {
				parts = append(parts, fmt.Sprintf("%d %s", counts[st], st))
			}
		}
		fw.Counts = strings.Join(parts, ", ")
		out = append(out, fw)
	}
	return out
}

// actions are the operator actions r takes now, as fleet.Act judges them.
func actions(r *view.WaveRollout) []string {
	if r.Status == view.FleetDone || r.Status == view.FleetAborted {
		return nil
	}
	var out []string
	for _, a := range fleet.Actions {
		switch {
		case a == fleet.ActResume && r.Status != view.FleetHalted:
		case a == fleet.ActRetry && r.Failed() == 0:
		case a == fleet.ActSkip && r.Wave >= len(r.Waves):
		default:
			out = append(out, a)
		}
	}
	return out
}

// fleetAct is an operator's resume, retry, skip or abort of a set's
// rollout, through the library as the API's (audited as the session's
// token), then the fleet page again with what it did.
func (w *Web) fleetAct(rw http.ResponseWriter, r *http.Request, s *session) {
	id, err := fleetRef(r, s)
	if err != nil {
		w.errorPage(rw, r, s, 0, err)
		return
	}
	action := r.PostFormValue("action")
	if !slices.Contains(fleet.Actions, action) {
		w.errorPage(rw, r, s, http.StatusBadRequest, fmt.Errorf("action must be one of %s", strings.Join(fleet.Actions, ", ")))
		return
	}
	f, err := knit.NewFleetAction(w.k, knit.FleetOptions{Set: id, Action: action, Actor: s.Token.Name, Reason: r.PostFormValue("reason")}).Run(r.Context())
	if err != nil {
		w.errorPage(rw, r, s, 0, err)
		return
	}
	flash := action + " of " + id + " recorded"
	if f.Rollout != nil {
		flash += ": " + f.Rollout.Why
	}
	http.Redirect(rw, r, "/fleets/"+id+"?flash="+url.QueryEscape(flash), http.StatusSeeOther)
}

// fleet tells a fleet page to refresh whenever the set's rollout record
// moves (an environment starts, verifies or fails; a wave starts; an
// operator acts).
func (w *live) fleet(rw http.ResponseWriter, r *http.Request, s *session) {
	id, err := fleetRef(r, s)
	if err != nil {
		http.Error(rw, err.Error(), statusOf(err))
		return
	}
	if _, err := knit.NewFleetReads(w.k).Status(r.Context(), id, nil); err != nil {
		http.Error(rw, err.Error(), statusOf(err))
		return
	}
	w.stream(rw, r, func(ctx context.Context) (string, string) {
		return "", w.fleetMark(ctx, id)
	})
}

// fleetMark changes whenever set id's rollout record is written.
func (w *live) fleetMark(ctx context.Context, id string) string {
	r, version, err := w.k.State().WaveRollout(ctx, id)
	if err != nil {
		return "?"
	}
	if r == nil {
		return "none"
	}
	return digest(fmt.Sprintf("%s|%d|%s", id, version, r.ChangedAt))
}
