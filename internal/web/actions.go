package web

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"

	"knit.dev/knit/internal/engine"
	"knit.dev/knit/internal/knit"
	"knit.dev/knit/internal/runner"
	"knit.dev/knit/internal/spec"
	"knit.dev/knit/internal/store"
	"knit.dev/knit/internal/view"
)

// errNoQueue: the dashboard was built without a way to start runs.
var errNoQueue = errors.New("this dashboard cannot start runs")

// startRun queues a plan, apply, drift check or (confirmed) teardown and
// shows its run page.
func (w *Web) startRun(rw http.ResponseWriter, r *http.Request, s *session) {
	id, err := w.envRef(r, s)
	if err != nil {
		w.errorPage(rw, r, s, 0, err)
		return
	}
	kind := store.RunKind(r.PostFormValue("kind"))
	switch kind {
	case engine.KindPlan, engine.KindApply, engine.KindDrift:
	case engine.KindTeardown:
		if r.PostFormValue("confirm") != id {
			w.errorPage(rw, r, s, http.StatusBadRequest, fmt.Errorf("teardown not confirmed: type %s to confirm", id))
			return
		}
	default:
		w.errorPage(rw, r, s, http.StatusBadRequest, fmt.Errorf("kind %q: use plan, apply, drift or teardown", kind))
		return
	}
	if _, err := knit.NewRecords(w.k).ResolveEnv(r.Context(), id); err != nil {
		w.errorPage(rw, r, s, 0, err)
		return
	}
	runID, err := w.enqueue(knit.RunRequest{Kind: kind, EnvRef: id, Actor: s.Token.Name, Reason: r.PostFormValue("reason"), Source: "dashboard",
		Caller: knit.CallerOf(s.Token)}, id)
	if err != nil {
		w.errorPage(rw, r, s, 0, err)
		return
	}
	http.Redirect(rw, r, "/runs/"+runID, http.StatusSeeOther)
}

func (w *Web) enqueue(req knit.RunRequest, env string) (string, error) {
	return w.submitter().Enqueue(req, env)
}

// submitter is where the dashboard's runs go: the server's queue.
func (w *Web) submitter() knit.Submitter {
	if w.opts.Runs == nil {
		return noQueue{}
	}
	return w.opts.Runs
}

// noQueue refuses every run: the dashboard has no queue.
type noQueue struct{}

func (noQueue) Enqueue(knit.RunRequest, string) (string, error) { return "", errNoQueue }

// doomed is a component a teardown would destroy.
type doomed struct {
	Name, Type, State string
	Protected         bool
}

type teardownPage struct {
	ID        string
	Doomed    []doomed
	Protected bool
}

// teardownConfirm lists what a teardown destroys, in the order it would,
// and asks to type the environment's name.
func (w *Web) teardownConfirm(rw http.ResponseWriter, r *http.Request, s *session) {
	id, err := w.envRef(r, s)
	if err != nil {
		w.errorPage(rw, r, s, 0, err)
		return
	}
	v, err := knit.NewRecords(w.k).Environment(r.Context(), id)
	if err != nil {
		w.errorPage(rw, r, s, 0, err)
		return
	}
	env, _, _ := w.k.AppliedSpec(r.Context(), id)
	p := teardownPage{ID: v.ID}
	for _, c := range slices.Backward(v.Components) {
		if c.Status == string(engine.Destroyed) || c.Status == string(engine.Pending) {
			continue
		}
		d := doomed{Name: c.Name, Type: c.Type, State: c.Status}
		if env != nil {
			if def := env.Component(c.Name); def != nil && def.DestroyProtection {
				d.Protected, p.Protected = true, true
			}
		}
		p.Doomed = append(p.Doomed, d)
	}
	w.render(rw, r, s, http.StatusOK, "teardown", "Tear down "+v.ID, "envs", p)
}

// approvalItem is one approval with its plan decoded, and what its decide
// form needs: the session (CSRF token, may it act) and where to return.
type approvalItem struct {
	view.Approval
	Plan    runner.Plan
	Tone    Tone
	Stale   string
	Pending bool
	Session *session
	Back    string
}

// PrevRevision is the revision before the one the plan was made from: the
// form links their diff.
func (a approvalItem) PrevRevision() int { return a.Revision - 1 }

// Short is the checksum as the CLI shows it (knit approvals).
func (a approvalItem) Short() string { return a.PlanChecksum[:min(12, len(a.PlanChecksum))] }

func newApprovalItem(a view.Approval, s *session, back string) approvalItem {
	it := approvalItem{Approval: a, Tone: toneOf(a.Status), Pending: a.Status == store.ApprovalPending, Session: s, Back: back}
	if it.Pending {
		it.Tone = ToneAct
	}
	_ = json.Unmarshal(a.Plan, &it.Plan)
	it.Plan.File, it.PlanFile = "", ""
	if a.Status == store.ApprovalStale {
		it.Stale = "stale: a newer plan of " + a.Component + " replaced this one (its inputs or module changed), so it can no longer be approved; approve the newer plan instead"
	}
	return it
}

// decisions are env's plans (of one component, or of all: "") waiting for
// a person, oldest first, ready for the decide form; back is the page the
// form returns to.
func (w *Web) decisions(ctx context.Context, s *session, env, component, back string) ([]approvalItem, error) {
	all, err := knit.NewRecords(w.k).Approvals(ctx, env, store.ApprovalPending)
	if err != nil {
		return nil, err
	}
	var out []approvalItem
	for _, a := range all {
		if component == "" || a.Component == component {
			out = append(out, newApprovalItem(a, s, back))
		}
	}
	return out, nil
}

type approvalsPage struct {
	// ChangeSets are the whole changes waiting, each approved at once.
	ChangeSets []view.ChangeSet
	Waiting    []approvalItem
	Recent     []approvalItem
}

// approvals lists what waits for a decision, with each plan and checksum,
// and recent decisions.
func (w *Web) approvals(rw http.ResponseWriter, r *http.Request, s *session) {
	all, err := knit.NewRecords(w.k).Approvals(r.Context(), "")
	if err != nil {
		w.errorPage(rw, r, s, 0, err)
		return
	}
	var p approvalsPage
	for _, a := range slices.Backward(all) { // the caller's teams' only: the library filters
		it := newApprovalItem(a, s, "")
		if it.Pending {
			p.Waiting = append(p.Waiting, it)
		} else if len(p.Recent) < 30 {
			p.Recent = append(p.Recent, it)
		}
	}
	slices.Reverse(p.Waiting)
	if p.ChangeSets, err = w.waitingChanges(r.Context(), ""); err != nil {
		w.errorPage(rw, r, s, 0, err)
		return
	}
	w.render(rw, r, s, http.StatusOK, "approvals", "Approvals", "approvals", p)
}

// decide approves or rejects one exact plan (by the checksum the page
// showed) with a reason; an approval queues the apply that carries it out.
// The library resolves the form's environment and checks the session's
// teams against it, however the form names it.
func (w *Web) decide(rw http.ResponseWriter, r *http.Request, s *session) {
	ref, comp := r.PostFormValue("env"), r.PostFormValue("component")
	approve := r.PostFormValue("decision") == "approve"
	reason := r.PostFormValue("reason")
	d, err := knit.NewDecide(w.k, knit.DecideRequest{EnvRef: ref, Component: comp, Approve: approve,
		Actor: s.Token.Name, Reason: reason, PlanChecksum: r.PostFormValue("checksum"),
		ChangeChecksum: r.PostFormValue("change"), Source: "dashboard"}, w.submitter()).Run(r.Context())
	if err != nil {
		w.errorPage(rw, r, s, 0, err)
		return
	}
	env, what := d.Approval.Env, comp
	if d.ChangeSet != nil {
		env, what = d.ChangeSet.Env, fmt.Sprintf("change set #%d", d.ChangeSet.ID)
	}
	back := safeNext(r.PostFormValue("back"))
	if !approve {
		if back == "/" {
			back = "/approvals"
		}
		http.Redirect(rw, r, back+"?flash="+url.QueryEscape("rejected "+what+" in "+env), http.StatusSeeOther)
		return
	}
	if back == "/" {
		back = "/env/" + env
	}
	http.Redirect(rw, r, back+"?flash="+url.QueryEscape("approved "+what+"; applying in run "+d.RunID), http.StatusSeeOther)
}

type auditPage struct {
	Env, Actor, Action string
	Events             []view.AuditEvent
	Next               string
}

// audit is the trail, filtered by environment, actor and action.
func (w *Web) audit(rw http.ResponseWriter, r *http.Request, s *session) {
	q := r.URL.Query()
	p := auditPage{Env: q.Get("env"), Actor: q.Get("actor"), Action: q.Get("action")}
	if p.Env != "" {
		if err := canSee(s, spec.TeamOf(p.Env)); err != nil {
			w.errorPage(rw, r, s, 0, err)
			return
		}
	}
	page, err := knit.NewRecords(w.k).Audit(r.Context(), knit.AuditFilter{Env: p.Env, Actor: p.Actor})
	if err != nil {
		w.errorPage(rw, r, s, 0, err)
		return
	}
	for _, e := range slices.Backward(page.Items) {
		if p.Action != "" && e.Action != p.Action {
			continue
		}
		p.Events = append(p.Events, e)
		if len(p.Events) == 200 {
			p.Next = strconv.Itoa(len(page.Items))
			break
		}
	}
	w.render(rw, r, s, http.StatusOK, "audit", "Audit trail", "audit", p)
}
