package server

import (
	"net/http"

	"knit.dev/knit/internal/knit"
)

// fleetAPI answers what sets generate from: the live environments, read
// through one knit.Fleet (kept by version) for the server's life.
type fleetAPI struct {
	s     *Server
	fleet *knit.Fleet
}

// list is GET /api/v1/live-environments?team=T: the live environments a
// set of team T generates from (its own team's, and those exporting
// outputs to T, each with only those outputs), what `knit render -f SET
// --server` and `knit validate` read. A token limited to other teams is
// refused.
func (a fleetAPI) list(w http.ResponseWriter, r *http.Request) {
	team := r.URL.Query().Get("team")
	if team == "" {
		a.s.fail(w, r, badReq("team: missing: ?team=TEAM, the set's spec.teamName"))
		return
	}
	live, err := a.fleet.Live(r.Context(), team)
	if err != nil {
		a.s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, live)
}
