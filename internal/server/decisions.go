package server

import (
	"fmt"
	"net/http"
	"strconv"

	"knit.dev/knit/internal/knit"
	"knit.dev/knit/internal/spec"
	"knit.dev/knit/internal/store"
	"knit.dev/knit/internal/view"
)

// decideRequest is the body of …/approve and …/reject.
type decideRequest struct {
	PlanChecksum string `json:"planChecksum"`
	Reason       string `json:"reason"`
}

func (s *Server) decide(approve bool) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		id, err := envID(r)
		if err != nil {
			s.fail(w, r, err)
			return
		}
		var body decideRequest
		if err := decode(r, &body); err != nil {
			s.fail(w, r, err)
			return
		}
		if e, err := knit.NewRecords(s.k).ResolveEnv(r.Context(), id); err != nil || e.AppliedRevision == 0 {
			if err == nil {
				err = fmt.Errorf("%w: %s has no applied revision, so no plan of it waits", store.ErrConflict, id)
			}
			s.fail(w, r, err)
			return
		}
		tok := principal(r.Context())
		d, err := knit.NewDecide(s.k, knit.DecideRequest{EnvRef: id, Component: r.PathValue("name"), Approve: approve,
			Actor: tok.Name, Reason: body.Reason, PlanChecksum: body.PlanChecksum, Source: "api"}, s.queue).Run(r.Context())
		if err != nil {
			s.fail(w, r, err)
			return
		}
		decided(w, map[string]any{"approval": approvalView(d.Approval)}, d.RunID)
	}
}

// decided answers a decision, with the run of the apply that carries out
// an approval.
func decided(w http.ResponseWriter, resp map[string]any, runID string) {
	if runID != "" {
		resp["runId"] = runID
	}
	writeJSON(w, http.StatusOK, resp)
}

// changeDecision is the body of …/change-set/approve and …/reject.
type changeDecision struct {
	Checksum string `json:"checksum"`
	Reason   string `json:"reason"`
}

// decideChange approves or rejects an environment's waiting change set:
// every plan in it at once.
func (s *Server) decideChange(approve bool) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		id, err := envID(r)
		if err != nil {
			s.fail(w, r, err)
			return
		}
		var body changeDecision
		if err := decode(r, &body); err != nil {
			s.fail(w, r, err)
			return
		}
		if body.Checksum == "" {
			s.fail(w, r, badReq("checksum is required: the change set's, as GET /api/v1/change-sets shows it"))
			return
		}
		tok := principal(r.Context())
		d, err := knit.NewDecide(s.k, knit.DecideRequest{EnvRef: id, Approve: approve, Actor: tok.Name,
			Reason: body.Reason, ChangeChecksum: body.Checksum, Source: "api"}, s.queue).Run(r.Context())
		if err != nil {
			s.fail(w, r, err)
			return
		}
		decided(w, map[string]any{"changeSet": d.ChangeSet}, d.RunID)
	}
}

// listChangeSets lists change sets, newest first: pending ones unless
// asked otherwise.
func (s *Server) listChangeSets(w http.ResponseWriter, r *http.Request) {
	ref, statuses, n, err := pendingFilter(r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	if n == 0 {
		n = 50
	}
	sets, err := knit.NewRecords(s.k).ChangeSets(r.Context(), ref, n, statuses...)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	if sets == nil {
		sets = []view.ChangeSet{}
	}
	writeJSON(w, http.StatusOK, map[string]any{"items": sets})
}

// pendingFilter reads what the lists of approvals and change sets take:
// env (the token must see its team), status (default pending; all for
// any) and limit.
func pendingFilter(r *http.Request) (ref string, statuses []string, n int, err error) {
	q := r.URL.Query()
	ref = q.Get("env")
	if ref != "" {
		if err := team(r, spec.TeamOf(ref)); err != nil {
			return "", nil, 0, err
		}
	}
	statuses = []string{store.ApprovalPending}
	if st := q.Get("status"); st == "all" {
		statuses = nil
	} else if st != "" {
		statuses = []string{st}
	}
	n, err = limitParam(r)
	return ref, statuses, n, err
}

func (s *Server) listApprovals(w http.ResponseWriter, r *http.Request) {
	ref, statuses, n, err := pendingFilter(r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	q := r.URL.Query()
	var after int64
	if c := q.Get("cursor"); c != "" {
		if after, err = strconv.ParseInt(c, 10, 64); err != nil || after < 0 {
			s.fail(w, r, badReq("cursor must be the next of a previous page (an approval ID)"))
			return
		}
	}
	p, err := s.k.ApprovalsPage(r.Context(), ref, statuses, after, n)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	out := knit.Page[approvalJSON]{Items: make([]approvalJSON, len(p.Items)), Next: p.Next}
	for i, a := range p.Items {
		out.Items[i] = approvalView(a)
	}
	writeJSON(w, http.StatusOK, out)
}
