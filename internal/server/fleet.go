package server

import (
	"net/http"

	"knit.dev/knit/internal/knit"
)

// listLiveEnvironments is GET /api/v1/live-environments?team=T: the live
// environments a set of team T generates from (its own team's, and those
// exporting outputs to T, each with only those outputs), what `knit
// render -f SET --server` and `knit validate` read. A token limited to
// other teams is refused.
func (s *Server) listLiveEnvironments(w http.ResponseWriter, r *http.Request) {
	team := r.URL.Query().Get("team")
	if team == "" {
		s.fail(w, r, badReq("team: missing: ?team=TEAM, the set's spec.teamName"))
		return
	}
	live, err := s.fleet.Live(r.Context(), team)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, live)
}

// newFleet is the server's reader of live environments (kept by version).
func newFleet(k *knit.Knit) *knit.Fleet { return knit.NewFleet(k) }
