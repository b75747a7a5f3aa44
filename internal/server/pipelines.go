package server

import (
	"fmt"
	"net/http"

	"knit.dev/knit/internal/httperr"

	"knit.dev/knit/internal/knit"
)

// pipelineAPI is the API's routes of promotion pipelines.
type pipelineAPI struct{ s *Server }

// getPipeline answers a pipeline's status: each stage's release and, for
// one that waits, why.
func (a pipelineAPI) getPipeline(w http.ResponseWriter, r *http.Request) {
	p, err := knit.NewRecords(a.s.k).PipelineStatus(r.Context(), r.PathValue("name"))
	if err != nil {
		a.s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, p)
}

// listReleases answers a pipeline's releases with their history, only
// those that reached ?stage= when given.
func (a pipelineAPI) listReleases(w http.ResponseWriter, r *http.Request) {
	rs, err := knit.NewRecords(a.s.k).Releases(r.Context(), r.PathValue("name"), r.URL.Query().Get("stage"))
	if err != nil {
		a.s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"items": rs})
}

// promote approves (and, past every gate, lets the server apply) a
// release entering a stage, or a change of the stage's own file; force
// needs an admin (audited).
func (a pipelineAPI) promote(w http.ResponseWriter, r *http.Request) {
	var body struct {
		Release string `json:"release"`
		Change  string `json:"change"`
		Stage   string `json:"stage"`
		Reason  string `json:"reason"`
		Force   bool   `json:"force"`
	}
	if err := decode(r, &body); err != nil {
		a.s.fail(w, r, err)
		return
	}
	if (body.Release == "") == (body.Change == "") || body.Stage == "" {
		a.s.fail(w, r, badReq("stage and one of release or change (a change of the stage's own file, c-…) are required"))
		return
	}
	st, err := knit.NewPromote(a.s.k, knit.PromoteOptions{Pipeline: r.PathValue("name"), Release: body.Release, Change: body.Change, Stage: body.Stage, Actor: principal(r.Context()).Name, Reason: body.Reason, Force: body.Force}).Run(r.Context())
	if err != nil {
		a.s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, st)
}

// rollbackStage asks the server to apply again the release a stage
// verified before its current one (operator; audited).
func (a pipelineAPI) rollbackStage(w http.ResponseWriter, r *http.Request) {
	var body struct {
		Stage  string `json:"stage"`
		Reason string `json:"reason"`
	}
	if err := decode(r, &body); err != nil {
		a.s.fail(w, r, err)
		return
	}
	if body.Stage == "" {
		a.s.fail(w, r, badReq("stage is required"))
		return
	}
	st, err := knit.NewRollbackStage(a.s.k, knit.StageOptions{Pipeline: r.PathValue("name"), Stage: body.Stage, Actor: principal(r.Context()).Name, Reason: body.Reason}).Run(r.Context())
	if err != nil {
		a.s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, st)
}

// planRelease answers what a release would change in each stage of the
// pipeline: a plan per stage, applying nothing (operators: it runs the
// stages' tools).
func (a pipelineAPI) planRelease(w http.ResponseWriter, r *http.Request) {
	var body struct {
		Release string   `json:"release"`
		Stages  []string `json:"stages"`
	}
	if err := decode(r, &body); err != nil {
		a.s.fail(w, r, err)
		return
	}
	if body.Release == "" {
		a.s.fail(w, r, badReq("release is required (knit releases PIPELINE lists them)"))
		return
	}
	if a.s.cfg.Pipelines == nil {
		a.s.fail(w, r, fmt.Errorf("%w: this server follows no pipelines (knit serve --pipeline FILE)", httperr.ErrNotConfigured))
		return
	}
	p, err := knit.NewReleasePlan(a.s.k, knit.ReleasePlanOptions{Pipeline: r.PathValue("name"), Release: body.Release, Stages: body.Stages,
		Actor: principal(r.Context()).Name, Runs: a.s.cfg.Pipelines}).Run(r.Context())
	if err != nil {
		a.s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, p)
}
