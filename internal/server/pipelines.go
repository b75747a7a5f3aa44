package server

import (
	"net/http"

	"knit.dev/knit/internal/knit"
)

// getPipeline answers a pipeline's status: each stage's release and, for
// one that waits, why.
func (s *Server) getPipeline(w http.ResponseWriter, r *http.Request) {
	p, err := knit.NewRecords(s.k).PipelineStatus(r.Context(), r.PathValue("name"))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, p)
}

// listReleases answers a pipeline's releases with their history, only
// those that reached ?stage= when given.
func (s *Server) listReleases(w http.ResponseWriter, r *http.Request) {
	rs, err := knit.NewRecords(s.k).Releases(r.Context(), r.PathValue("name"), r.URL.Query().Get("stage"))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"items": rs})
}

// promote approves (and, past every gate, lets the server apply) a
// release entering a stage, or a change of the stage's own file; force
// needs an admin (audited).
func (s *Server) promote(w http.ResponseWriter, r *http.Request) {
	var body struct {
		Release string `json:"release"`
		Change  string `json:"change"`
		Stage   string `json:"stage"`
		Reason  string `json:"reason"`
		Force   bool   `json:"force"`
	}
	if err := decode(r, &body); err != nil {
		s.fail(w, r, err)
		return
	}
	if (body.Release == "") == (body.Change == "") || body.Stage == "" {
		s.fail(w, r, badReq("stage and one of release or change (a change of the stage's own file, c-…) are required"))
		return
	}
	st, err := knit.NewPromote(s.k, knit.PromoteOptions{Pipeline: r.PathValue("name"), Release: body.Release, Change: body.Change, Stage: body.Stage, Actor: principal(r.Context()).Name, Reason: body.Reason, Force: body.Force}).Run(r.Context())
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, st)
}

// rollbackStage asks the server to apply again the release a stage
// verified before its current one (operator; audited).
func (s *Server) rollbackStage(w http.ResponseWriter, r *http.Request) {
	var body struct {
		Stage  string `json:"stage"`
		Reason string `json:"reason"`
	}
	if err := decode(r, &body); err != nil {
		s.fail(w, r, err)
		return
	}
	if body.Stage == "" {
		s.fail(w, r, badReq("stage is required"))
		return
	}
	st, err := knit.NewRollbackStage(s.k, knit.StageOptions{Pipeline: r.PathValue("name"), Stage: body.Stage, Actor: principal(r.Context()).Name, Reason: body.Reason}).Run(r.Context())
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, st)
}
