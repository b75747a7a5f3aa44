package server

import (
	"net/http"

	"knit.dev/knit/internal/knit"
	"knit.dev/knit/internal/store"
)

// routes registers every endpoint. Reads need a viewer token, runs and
// approvals an operator, tokens, unlocking and revealing secrets an admin.
// /healthz and /readyz answer without a token (probes); they say nothing
// about environments.
func (s *Server) routes() {
	viewer, operator, admin := store.Role(store.RoleViewer), store.Role(store.RoleOperator), store.Role(store.RoleAdmin)
	h := s.mux.HandleFunc
	h("GET /healthz", func(w http.ResponseWriter, _ *http.Request) { writeJSON(w, 200, map[string]string{"status": "ok"}) })
	h("GET /readyz", s.readyz)
	h("GET /metrics", s.authed(viewer, s.met.handler().ServeHTTP))
	h("GET /api/v1/openapi.yaml", s.authed(viewer, serveOpenAPI))

	h("GET /api/v1/environments", s.authed(viewer, s.listEnvironments))
	h("GET /api/v1/environments/{team}/{env}", s.authed(viewer, s.getEnvironment))
	h("GET /api/v1/environments/{team}/{env}/health", s.authed(operator, s.checkHealth))
	h("GET /api/v1/environments/{team}/{env}/outputs", s.authed(viewer, s.getOutputs))
	h("GET /api/v1/environments/{team}/{env}/revisions", s.authed(viewer, s.listRevisions))
	h("GET /api/v1/environments/{team}/{env}/diff", s.authed(viewer, s.diffRevisions))
	h("GET /api/v1/environments/{team}/{env}/runs", s.authed(viewer, s.listRuns))
	h("POST /api/v1/environments/{team}/{env}/runs", s.authed(operator, s.startRun))
	h("POST /api/v1/environments/{team}/{env}/rollout/accept", s.authed(operator, s.acceptRollout))
	ra := rolloutAPI{s}
	h("GET /api/v1/environments/{team}/{env}/rollout", s.authed(viewer, ra.status))
	h("POST /api/v1/environments/{team}/{env}/rollout/promote", s.authed(operator, ra.steer(ra.promote)))
	h("POST /api/v1/environments/{team}/{env}/rollout/abort", s.authed(operator, ra.steer(ra.abort)))
	h("POST /api/v1/environments/{team}/{env}/rollout/retry", s.authed(operator, ra.steer(ra.retry)))
	h("GET /api/v1/environments/{team}/{env}/components/{name}/logs", s.authed(viewer, s.componentLogs))
	h("DELETE /api/v1/environments/{team}/{env}/lock", s.authed(admin, s.unlock))
	h("POST /api/v1/environments/{team}/{env}/ttl", s.authed(operator, s.extendTTL))
	h("POST /api/v1/environments/{team}/{env}/components/{name}/approve", s.authed(operator, s.decide(true)))
	h("POST /api/v1/environments/{team}/{env}/components/{name}/reject", s.authed(operator, s.decide(false)))

	h("POST /api/v1/environments/{team}/{env}/change-set/approve", s.authed(operator, s.decideChange(true)))
	h("POST /api/v1/environments/{team}/{env}/change-set/reject", s.authed(operator, s.decideChange(false)))

	h("GET /api/v1/runs/{id}", s.authed(viewer, s.getRun))
	h("POST /api/v1/runs/{id}/cancel", s.authed(operator, s.cancelRun))
	h("GET /api/v1/runs/{id}/events", s.authed(viewer, s.runEvents))

	pa := pipelineAPI{s}
	h("GET /api/v1/pipelines/{name}", s.authed(viewer, pa.getPipeline))
	h("GET /api/v1/pipelines/{name}/releases", s.authed(viewer, pa.listReleases))
	h("POST /api/v1/pipelines/{name}/promote", s.authed(operator, pa.promote))
	h("POST /api/v1/pipelines/{name}/rollback", s.authed(operator, pa.rollbackStage))
	h("POST /api/v1/pipelines/{name}/plan", s.authed(operator, pa.planRelease))

	fl := wavesAPI{s}
	h("GET /api/v1/fleets", s.authed(viewer, fl.list))
	h("GET /api/v1/fleets/{team}/{set}", s.authed(viewer, fl.get))
	h("POST /api/v1/fleets/{team}/{set}/actions", s.authed(operator, fl.act))

	h("GET /api/v1/diff", s.authed(viewer, s.diffEnvironments))
	h("GET /api/v1/approvals", s.authed(viewer, s.listApprovals))
	h("GET /api/v1/change-sets", s.authed(viewer, s.listChangeSets))
	h("GET /api/v1/audit", s.authed(viewer, s.listAudit))
	h("GET /api/v1/previews", s.authed(viewer, s.listPreviews))
	h("GET /api/v1/live-environments", s.authed(viewer, fleetAPI{s, s.fleet}.list))
	h("POST /api/v1/webhooks/git", s.gitWebhook)
}

func (s *Server) readyz(w http.ResponseWriter, r *http.Request) {
	select {
	case <-s.ready:
	default:
		writeJSON(w, http.StatusServiceUnavailable, map[string]string{"status": "starting"})
		return
	}
	if _, err := knit.NewRecords(s.k).Setting(r.Context(), "ready-probe"); err != nil && !isNotFound(err) {
		writeJSON(w, http.StatusServiceUnavailable, map[string]string{"status": "store unavailable"})
		return
	}
	writeJSON(w, http.StatusOK, map[string]string{"status": "ready"})
}
