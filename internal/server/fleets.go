package server

import (
	"net/http"
	"slices"
	"strings"

	"knit.dev/knit/internal/fleet"
	"knit.dev/knit/internal/knit"
	"knit.dev/knit/internal/spec"
)

// wavesAPI is the handlers of the sets' rollouts in waves (/api/v1/fleets).
type wavesAPI struct{ s *Server }

// list answers the sets with a rollout in waves the caller may see.
func (a wavesAPI) list(w http.ResponseWriter, r *http.Request) {
	s := a.s
	ids, err := knit.NewFleetReads(s.k).List(r.Context())
	if err != nil {
		s.fail(w, r, err)
		return
	}
	if ids == nil {
		ids = []string{}
	}
	writeJSON(w, http.StatusOK, map[string]any{"items": ids})
}

// get answers a set's rollout: its environments with their release,
// status and wave (those ?selector=k=v,… matches), and why the next wave
// waits.
func (a wavesAPI) get(w http.ResponseWriter, r *http.Request) {
	s := a.s
	sel, err := spec.ParseSelector(r.URL.Query().Get("selector"))
	if err != nil {
		s.fail(w, r, badReq(err.Error()))
		return
	}
	f, err := knit.NewFleetReads(s.k).Status(r.Context(), r.PathValue("team")+"/"+r.PathValue("set"), sel)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, f)
}

// act is an operator's resume, retry, skip or abort of a set's
// rollout (audited).
func (a wavesAPI) act(w http.ResponseWriter, r *http.Request) {
	s := a.s
	var body struct {
		Action string `json:"action"`
		Reason string `json:"reason"`
	}
	if err := decode(r, &body); err != nil {
		s.fail(w, r, err)
		return
	}
	if !slices.Contains(fleet.Actions, body.Action) {
		s.fail(w, r, badReq("action must be one of "+strings.Join(fleet.Actions, ", ")))
		return
	}
	f, err := knit.NewFleetAction(s.k, knit.FleetOptions{Set: r.PathValue("team") + "/" + r.PathValue("set"), Action: body.Action,
		Actor: principal(r.Context()).Name, Reason: body.Reason}).Run(r.Context())
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, f)
}
