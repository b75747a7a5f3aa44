package web

import (
	"fmt"
	"net/http"
	"net/url"

	"knit.dev/knit/internal/knit"
	"knit.dev/knit/internal/view"
)

// pipelinesPage lists the pipelines the session may see.
func (w *Web) pipelines(rw http.ResponseWriter, r *http.Request, s *session) {
	names, err := knit.NewRecords(w.k).PipelineNames(r.Context())
	if err != nil {
		w.errorPage(rw, r, s, 0, err)
		return
	}
	w.render(rw, r, s, http.StatusOK, "pipelines", "Pipelines", "pipelines", names)
}

// pipeline shows a pipeline's stages left to right: the release each
// holds, the last one tried with its verdict, the one waiting with why
// (a soak counts down), and for operators the promote button.
func (w *Web) pipeline(rw http.ResponseWriter, r *http.Request, s *session) {
	p, err := knit.NewRecords(w.k).PipelineStatus(r.Context(), r.PathValue("name"))
	if err != nil {
		w.errorPage(rw, r, s, 0, err)
		return
	}
	w.render(rw, r, s, http.StatusOK, "pipeline", "Pipeline "+p.Name, "pipelines", p)
}

// promote approves a release entering a stage, or a change of the stage's
// own file, as the session's token (the library refuses the author's own
// approval where the stage requires another approver), then shows the
// pipeline again.
func (w *Web) promote(rw http.ResponseWriter, r *http.Request, s *session) {
	name, release, change, stage := r.PathValue("name"), r.PostFormValue("release"), r.PostFormValue("change"), r.PostFormValue("stage")
	st, err := knit.NewPromote(w.k, knit.PromoteOptions{Pipeline: name, Release: release, Change: change, Stage: stage, Actor: s.Token.Name, Reason: r.PostFormValue("reason"), Force: false}).Run(r.Context())
	if err != nil {
		w.errorPage(rw, r, s, 0, err)
		return
	}
	flash := fmt.Sprintf("approved %s into %s", release, stage)
	switch {
	case change != "" && st.StageChange != nil:
		flash = fmt.Sprintf("approved change %s of %s: %s (%s)", change, stage, st.StageChange.Reason, st.StageChange.Message)
	case st.Waiting != nil && st.Waiting.Release == release:
		flash += ": " + st.Waiting.Reason + " (" + st.Waiting.Message + ")"
	}
	http.Redirect(rw, r, "/pipelines/"+url.PathEscape(name)+"?flash="+url.QueryEscape(flash), http.StatusSeeOther)
}

// canPromote reports whether a stage's waiting release may take an
// approval now: it waits for its gates, not for a run or after a failure.
func canPromote(w *view.Waiting) bool {
	if w == nil {
		return false
	}
	switch w.Reason {
	case view.WaitSoaking, view.WaitWindowClosed, view.WaitAwaitingApproval:
		return true
	}
	return false
}

// rollback asks for a stage to run again the release it verified before
// its current one, then shows the pipeline again.
func (w *Web) rollback(rw http.ResponseWriter, r *http.Request, s *session) {
	name, stage := r.PathValue("name"), r.PostFormValue("stage")
	st, err := knit.NewRollbackStage(w.k, knit.StageOptions{Pipeline: name, Stage: stage, Actor: s.Token.Name, Reason: r.PostFormValue("reason")}).Run(r.Context())
	if err != nil {
		w.errorPage(rw, r, s, 0, err)
		return
	}
	flash := "rollback of " + stage + " asked"
	if st.Waiting != nil {
		flash += ": " + st.Waiting.Release + " " + st.Waiting.Reason
	}
	http.Redirect(rw, r, "/pipelines/"+url.PathEscape(name)+"?flash="+url.QueryEscape(flash), http.StatusSeeOther)
}
