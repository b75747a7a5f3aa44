package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"knit.dev/knit/internal/controller/runqueue"
	"knit.dev/knit/internal/engine"
	"knit.dev/knit/internal/knit"
	"knit.dev/knit/internal/spec"
	"knit.dev/knit/internal/store"
	"knit.dev/knit/internal/view"
)

func isNotFound(err error) bool { return errors.Is(err, store.ErrNotFound) }

// envID is the environment a path names, once the token may see its team.
func envID(r *http.Request) (string, error) {
	t, e := r.PathValue("team"), r.PathValue("env")
	if err := team(r, t); err != nil {
		return "", err
	}
	return t + "/" + e, nil
}

func limitParam(r *http.Request) (int, error) {
	v := r.URL.Query().Get("limit")
	if v == "" {
		return 0, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 || n > 1000 {
		return 0, badReq("limit must be a number from 1 to 1000")
	}
	return n, nil
}

// listEnvironments is GET /environments: a page of the environments the
// token may see. The library filters by its teams before it cuts the
// page, so a full page holds limit of them.
func (s *Server) listEnvironments(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	n, err := limitParam(r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	f := knit.EnvironmentFilter{Team: q.Get("team"), Status: q.Get("status"), After: q.Get("cursor"), Limit: n}
	if f.Team != "" {
		if err := team(r, f.Team); err != nil {
			s.fail(w, r, err)
			return
		}
	}
	items, next, err := s.environmentsPage(r.Context(), f)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	body, err := pageJSON(items, next)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeBody(w, http.StatusOK, body)
}

// environmentsPage is one page of the environments f selects that ctx's
// caller may see, each encoded: from the view cache when every one's
// version is unchanged, else read afresh (and cached).
func (s *Server) environmentsPage(ctx context.Context, f knit.EnvironmentFilter) ([][]byte, string, error) {
	vs, err := knit.NewRecords(s.k).EnvironmentVersions(ctx, f)
	if err != nil {
		return nil, "", err
	}
	if items, ok := s.views.getPage(vs.Items); ok {
		return items, vs.Next, nil
	}
	return s.readEnvironmentsPage(ctx, f, vs.Items)
}

// readEnvironmentsPage reads and encodes a page of environments, caching
// each under the version read before it.
func (s *Server) readEnvironmentsPage(ctx context.Context, f knit.EnvironmentFilter, versions []view.EnvironmentVersion) ([][]byte, string, error) {
	p, err := s.k.Environments(ctx, f)
	if err != nil {
		return nil, "", err
	}
	before := make(map[string]int64, len(versions))
	for _, v := range versions {
		before[v.ID] = v.Version
	}
	items := make([][]byte, 0, len(p.Items))
	for _, e := range p.Items {
		b, err := encodeJSON(e)
		if err != nil {
			return nil, "", err
		}
		if v, ok := before[e.ID]; ok {
			s.views.put(summaryView, e.ID, v, b)
		}
		items = append(items, b)
	}
	return items, p.Next, nil
}

func (s *Server) getEnvironment(w http.ResponseWriter, r *http.Request) {
	id, err := envID(r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	// An unknown environment is left to Environment, whose error says
	// which ones there are.
	version, verr := knit.NewRecords(s.k).EnvironmentVersion(r.Context(), id)
	if verr == nil {
		if b, ok := s.views.get(detailView, id, version); ok {
			writeBody(w, http.StatusOK, b)
			return
		}
	}
	v, err := knit.NewRecords(s.k).Environment(r.Context(), id)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	b, err := encodeJSON(v)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	if verr == nil {
		s.views.put(detailView, id, version, b)
	}
	writeBody(w, http.StatusOK, b)
}

// checkHealth runs the environment's health checks now (commands and
// probes run here, so it needs an operator) and answers every verdict.
func (s *Server) checkHealth(w http.ResponseWriter, r *http.Request) {
	id, err := envID(r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	h, err := s.k.Health(r.Context(), id)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, h)
}

func (s *Server) getOutputs(w http.ResponseWriter, r *http.Request) {
	id, err := envID(r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	comp := r.URL.Query().Get("component")
	var outs map[string]map[string]knit.OutputView
	if r.URL.Query().Get("reveal") == "true" {
		tok := principal(r.Context())
		if !tok.Role.AtLeast(store.RoleAdmin) {
			s.fail(w, r, fmt.Errorf("%w: revealing sensitive outputs needs an admin token", errForbidden))
			return
		}
		outs, err = knit.NewReveal(s.k, id, comp, tok.Name).Run(r.Context())
	} else {
		outs, err = knit.NewRecords(s.k).Outputs(r.Context(), id, comp)
	}
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, outs)
}

func (s *Server) listRevisions(w http.ResponseWriter, r *http.Request) {
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
	cursor := r.URL.Query().Get("cursor")
	if _, err := strconv.Atoi(cursor); cursor != "" && err != nil {
		s.fail(w, r, badReq("cursor must be the next of a previous page (a revision number)"))
		return
	}
	p, err := knit.NewRecords(s.k).Revisions(r.Context(), id, cursor, n)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, knit.Page[revisionView]{Items: revisionViews(p.Items), Next: p.Next})
}

// diffRevisions answers what changed in the file between revisions a and b.
func (s *Server) diffRevisions(w http.ResponseWriter, r *http.Request) {
	id, err := envID(r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	a, errA := strconv.Atoi(r.URL.Query().Get("a"))
	b, errB := strconv.Atoi(r.URL.Query().Get("b"))
	if errA != nil || errB != nil || a < 1 || b < 1 {
		s.fail(w, r, badReq("a and b must be revision numbers: ?a=OLDER&b=NEWER"))
		return
	}
	d, err := knit.NewRecords(s.k).Diff(r.Context(), id, a, b)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, d)
}

// revisionView is a revision as the API shows it: the spec as JSON text,
// without the checkout it resolves against (the data dir is the server's
// business; Source names the commit).
type revisionView struct {
	view.Revision
	Root string `json:"root,omitempty"` // never set
	Spec string `json:"spec"`
}

func revisionViews(revs []view.Revision) []revisionView {
	out := make([]revisionView, len(revs))
	for i, r := range revs {
		out[i] = revisionView{Revision: r, Spec: string(r.Spec)}
	}
	return out
}

func decode(r *http.Request, v any) error {
	dec := json.NewDecoder(http.MaxBytesReader(nil, r.Body, 1<<20))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return badReq("request body: " + err.Error())
	}
	return nil
}

func (s *Server) startRun(w http.ResponseWriter, r *http.Request) {
	id, err := envID(r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	var body view.RunRequest
	if err := decode(r, &body); err != nil {
		s.fail(w, r, err)
		return
	}
	switch body.Kind {
	case engine.KindPlan, engine.KindApply, engine.KindDrift, engine.KindTeardown, engine.KindRollback:
	default:
		s.fail(w, r, badReq(fmt.Sprintf("kind %q: use plan, apply, drift, teardown or rollback", body.Kind)))
		return
	}
	if body.To != 0 && body.Kind != engine.KindRollback {
		s.fail(w, r, badReq("to is for rollback runs"))
		return
	}
	if body.Reconcile && body.Kind != engine.KindDrift {
		s.fail(w, r, badReq("reconcile is for drift runs"))
		return
	}
	if body.AutoApprove && body.Kind != engine.KindTeardown {
		s.fail(w, r, badReq("autoApprove is for teardown runs: approve waiting plans with knit approve"))
		return
	}
	e, err := knit.NewRecords(s.k).ResolveEnv(r.Context(), id)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	if e.AppliedRevision == 0 {
		s.fail(w, r, fmt.Errorf("%w: %s has no valid revision to run yet", store.ErrConflict, id))
		return
	}
	if body.Kind == engine.KindRollback {
		// Nothing to go back to is said now, not by a refused run.
		if _, err := knit.NewRecords(s.k).RollbackTarget(r.Context(), id, body.To); err != nil {
			s.fail(w, r, err)
			return
		}
	}
	tok := principal(r.Context())
	runID, err := s.queue.Enqueue(knit.RunRequest{Kind: body.Kind, EnvRef: id, Components: body.Components, To: body.To,
		Reconcile: body.Reconcile, AutoApprove: body.AutoApprove, Actor: tok.Name, Reason: body.Reason, Source: "api",
		Caller: knit.CallerOf(tok)}, id)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusAccepted, map[string]any{"runId": runID, "status": store.StatusQueued})
}

// runView is GET /runs/{id}: the run as recorded, or its place in the queue.
type runView struct {
	view.Run
	Components []componentRunJSON `json:"components"`
}

// lookupRun finds a run (knit.FindRun, which checks the token may see
// its environment): its record, or its place in the queue.
func (s *Server) lookupRun(r *http.Request, id string) (runView, *runqueue.Job, error) {
	var j *runqueue.Job
	f, err := s.k.FindRun(r.Context(), id, func(id string) (knit.QueuedRun, bool) {
		job, ok := s.queue.Job(id)
		if !ok {
			return knit.QueuedRun{}, false
		}
		j = job
		return knit.QueuedRun{Env: job.Env, Req: job.Req, Started: job.Started(), Err: job.Err}, true
	})
	if err != nil {
		return runView{}, nil, err
	}
	if q := f.Queued; q != nil && (q.Waiting() || q.Refused() != nil) {
		v := runView{Run: view.Run{ID: id, Env: q.Env, Kind: q.Req.Kind, Status: store.StatusQueued, Actor: q.Req.Actor,
			Reason: q.Req.Reason, Source: q.Req.Source}, Components: []componentRunJSON{}}
		if err := q.Refused(); err != nil {
			v.Status, v.Reason, v.Error = store.StatusRefused, "", err.Error()
		}
		return v, j, nil
	}
	if f.Record == nil {
		rec, err := s.k.RunRecord(r.Context(), id) // live here, recorded by now
		if err != nil {
			return runView{}, j, err
		}
		f.Record = &rec
	}
	return runView{Run: f.Record.Run, Components: componentRunViews(f.Record.Components)}, j, nil
}

func (s *Server) getRun(w http.ResponseWriter, r *http.Request) {
	v, _, err := s.lookupRun(r, r.PathValue("id"))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, v)
}

func (s *Server) cancelRun(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	if _, _, err := s.lookupRun(r, id); err != nil {
		s.fail(w, r, err)
		return
	}
	if err := s.queue.Cancel(id); err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusAccepted, map[string]string{"runId": id, "status": "cancelling"})
}

func (s *Server) listAudit(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	n, err := limitParam(r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	if n == 0 {
		n = 100
	}
	f := knit.AuditFilter{Env: q.Get("env"), Actor: q.Get("actor"), After: q.Get("cursor"), Limit: n}
	if _, err := strconv.ParseInt(f.After, 10, 64); f.After != "" && err != nil {
		s.fail(w, r, badReq("cursor must be the next of a previous page (an event ID)"))
		return
	}
	for name, dst := range map[string]*time.Time{"since": &f.Since, "until": &f.Until} {
		if v := q.Get(name); v != "" {
			t, err := time.Parse(time.RFC3339, v)
			if err != nil {
				s.fail(w, r, badReq(name+" must be an RFC 3339 time (2026-01-02T15:04:05Z)"))
				return
			}
			*dst = t
		}
	}
	if f.Env != "" {
		if err := team(r, spec.TeamOf(f.Env)); err != nil {
			s.fail(w, r, err)
			return
		}
	}
	p, err := knit.NewRecords(s.k).Audit(r.Context(), f)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, p)
}

func (s *Server) unlock(w http.ResponseWriter, r *http.Request) {
	id, err := envID(r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	var body struct {
		Reason string `json:"reason"`
	}
	if r.ContentLength > 0 {
		if err := decode(r, &body); err != nil {
			s.fail(w, r, err)
			return
		}
	}
	l, err := knit.NewUnlock(s.k, id, principal(r.Context()).Name, body.Reason).Run(r.Context())
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"released": l})
}

// acceptRollout is POST …/rollout/accept: a person accepts the paused
// rollout of the environment's applied revision (knit approve ENV).
func (s *Server) acceptRollout(w http.ResponseWriter, r *http.Request) {
	id, err := envID(r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	var body struct {
		Reason string `json:"reason"`
	}
	if err := decode(r, &body); err != nil {
		s.fail(w, r, err)
		return
	}
	e, err := knit.NewAccept(s.k, id, principal(r.Context()).Name, body.Reason).Run(r.Context())
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"env": e.ID, "revision": e.AppliedRevision, "status": e.Status})
}
