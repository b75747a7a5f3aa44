package server

import (
	"net/http"

	"knit.dev/knit/internal/knit"
	"knit.dev/knit/internal/view"
)

// listRuns is GET …/runs: an environment's runs, newest first; the cursor
// is a run ID (knit history ENV --server).
func (s *Server) listRuns(w http.ResponseWriter, r *http.Request) {
	id, err := envID(r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	n, err := limitParam(r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	p, err := knit.NewRecords(s.k).History(r.Context(), id, r.URL.Query().Get("cursor"), n)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, p)
}

// componentLog is a component run with its tool output (secrets masked
// when it was recorded).
type componentLog struct {
	componentRunJSON
	Log string `json:"log"`
}

// componentLogs is GET …/components/{name}/logs: the component's newest
// component run, log included (knit logs ENV COMP --server).
func (s *Server) componentLogs(w http.ResponseWriter, r *http.Request) {
	id, err := envID(r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	cr, err := knit.NewRecords(s.k).Logs(r.Context(), id, r.PathValue("name"))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, componentLog{componentRunJSON: componentRunViews([]view.ComponentRun{cr})[0], Log: cr.Log})
}
