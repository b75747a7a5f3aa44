package client

import (
	"context"
	"fmt"
	"net/url"
	"strconv"
	"time"

	"knit.dev/knit/internal/store"
	"knit.dev/knit/internal/view"
)

// Environments lists environments (GET /environments), one page.
func (c *Client) Environments(ctx context.Context, f view.EnvironmentFilter) (view.Page[view.EnvironmentSummary], error) {
	q := url.Values{}
	set(q, "team", f.Team)
	set(q, "status", f.Status)
	set(q, "cursor", f.After)
	if f.Limit > 0 {
		q.Set("limit", strconv.Itoa(min(f.Limit, 1000)))
	}
	var p view.Page[view.EnvironmentSummary]
	err := c.do(ctx, "GET", "/environments", q, nil, &p)
	return p, err
}

// Environment returns one environment with its components (team/env).
func (c *Client) Environment(ctx context.Context, id string) (view.EnvironmentView, error) {
	var v view.EnvironmentView
	p, err := envPath(id)
	if err != nil {
		return v, err
	}
	err = c.do(ctx, "GET", p, nil, nil, &v)
	return v, err
}

// Health runs an environment's health checks on the server now and
// returns every verdict (the server keeps it as the environment's last).
func (c *Client) Health(ctx context.Context, id string) (view.Health, error) {
	var h view.Health
	p, err := envPath(id)
	if err != nil {
		return h, err
	}
	err = c.do(ctx, "GET", p+"/health", nil, nil, &h)
	return h, err
}

// Outputs returns an environment's outputs by component (one component if
// set); reveal shows sensitive values, which needs an admin token and is
// audited on the server.
func (c *Client) Outputs(ctx context.Context, id, component string, reveal bool) (map[string]map[string]view.OutputView, error) {
	p, err := envPath(id)
	if err != nil {
		return nil, err
	}
	q := url.Values{}
	set(q, "component", component)
	if reveal {
		q.Set("reveal", "true")
	}
	var out map[string]map[string]view.OutputView
	err = c.do(ctx, "GET", p+"/outputs", q, nil, &out)
	return out, err
}

// History lists an environment's runs, newest first, older than the run
// before ("" = from the newest), at most n (GET …/runs).
func (c *Client) History(ctx context.Context, id, before string, n int) (view.Page[view.Run], error) {
	var page view.Page[view.Run]
	p, err := envPath(id)
	if err != nil {
		return page, err
	}
	q := url.Values{}
	set(q, "cursor", before)
	if n > 0 {
		q.Set("limit", strconv.Itoa(min(n, 1000)))
	}
	err = c.do(ctx, "GET", p+"/runs", q, nil, &page)
	return page, err
}

// Logs returns a component's newest component run with its tool output
// (GET …/components/{name}/logs).
func (c *Client) Logs(ctx context.Context, id, component string) (view.ComponentRun, error) {
	p, err := envPath(id)
	if err != nil {
		return view.ComponentRun{}, err
	}
	var body componentRunWire
	err = c.do(ctx, "GET", p+"/components/"+url.PathEscape(component)+"/logs", nil, nil, &body)
	return body.componentRun(), err
}

// Approvals lists approvals of an environment ("" = all the token sees),
// pending ones unless all.
func (c *Client) Approvals(ctx context.Context, id string, all bool) ([]view.Approval, error) {
	q := url.Values{}
	set(q, "env", id)
	if all {
		q.Set("status", "all")
	}
	q.Set("limit", "1000")
	out := []view.Approval{}
	for { // every page
		var p view.Page[approvalWire]
		if err := c.do(ctx, "GET", "/approvals", q, nil, &p); err != nil {
			return out, err
		}
		for _, a := range p.Items {
			out = append(out, a.approval())
		}
		if p.Next == "" {
			return out, nil
		}
		q.Set("cursor", p.Next)
	}
}

// ChangeSets lists change sets of an environment ("" = all the token
// sees), newest first, pending ones unless all.
func (c *Client) ChangeSets(ctx context.Context, id string, all bool) ([]view.ChangeSet, error) {
	q := url.Values{}
	set(q, "env", id)
	if all {
		q.Set("status", "all")
	}
	q.Set("limit", "1000")
	var p struct {
		Items []view.ChangeSet `json:"items"`
	}
	err := c.do(ctx, "GET", "/change-sets", q, nil, &p)
	return p.Items, err
}

// ChangeDecision is the server's answer to a change set's approval or
// rejection: the change set and, for an approval, the apply run it started.
type ChangeDecision struct {
	ChangeSet view.ChangeSet `json:"changeSet"`
	RunID     string         `json:"runId,omitempty"`
}

// DecideChange approves or rejects the change set waiting in environment
// id whose checksum is checksum (or starts with it: 12 characters or
// more); another change set waiting is a 409 (ErrConflict).
func (c *Client) DecideChange(ctx context.Context, id string, approve bool, checksum, reason string) (ChangeDecision, error) {
	var d ChangeDecision
	if checksum == "" {
		return d, fmt.Errorf("decide the change set of %s: name its checksum (knit approvals %s)", id, id)
	}
	p, err := envPath(id)
	if err != nil {
		return d, err
	}
	verb := "reject"
	if approve {
		verb = "approve"
	}
	err = c.do(ctx, "POST", p+"/change-set/"+verb, nil, map[string]string{"checksum": checksum, "reason": reason}, &d)
	return d, err
}

// Decision is the server's answer to an approval or a rejection: the
// decided approval and, for an approval, the apply run it started.
type Decision struct {
	Approval view.Approval `json:"approval"`
	RunID    string        `json:"runId,omitempty"`
}

// Decide approves or rejects the plan a component waits with. checksum is
// required (the server refuses a decision without one) and must be the
// waiting plan's (409, ErrConflict, otherwise).
func (c *Client) Decide(ctx context.Context, id, component string, approve bool, checksum, reason string) (Decision, error) {
	var d Decision
	if checksum == "" {
		return d, fmt.Errorf("decide %s of %s: name the checksum of the plan (knit approvals %s)", component, id, id)
	}
	p, err := envPath(id)
	if err != nil {
		return d, err
	}
	verb := "reject"
	if approve {
		verb = "approve"
	}
	body := map[string]string{"planChecksum": checksum, "reason": reason}
	var wire struct {
		Approval approvalWire `json:"approval"`
		RunID    string       `json:"runId,omitempty"`
	}
	err = c.do(ctx, "POST", p+"/components/"+url.PathEscape(component)+"/"+verb, nil, body, &wire)
	d.Approval, d.RunID = wire.Approval.approval(), wire.RunID
	return d, err
}

// Audit lists the audit trail, oldest first, one page.
func (c *Client) Audit(ctx context.Context, f view.AuditFilter) (view.Page[view.AuditEvent], error) {
	q := url.Values{}
	set(q, "env", f.Env)
	set(q, "actor", f.Actor)
	set(q, "cursor", f.After)
	if !f.Since.IsZero() {
		q.Set("since", f.Since.UTC().Format(time.RFC3339))
	}
	if !f.Until.IsZero() {
		q.Set("until", f.Until.UTC().Format(time.RFC3339))
	}
	if f.Limit > 0 {
		q.Set("limit", strconv.Itoa(min(f.Limit, 1000)))
	}
	var p view.Page[view.AuditEvent]
	err := c.do(ctx, "GET", "/audit", q, nil, &p)
	return p, err
}

// RunRequest is the body of POST …/runs (view.RunRequest).
type RunRequest = view.RunRequest

// AcceptRollout accepts environment id's paused rollout: its applied
// revision becomes good and the environment applied. It answers the
// environment's ID, revision and new status.
func (c *Client) AcceptRollout(ctx context.Context, id, reason string) (view.Environment, error) {
	var out struct {
		Env      string          `json:"env"`
		Revision int             `json:"revision"`
		Status   store.EnvStatus `json:"status"`
	}
	p, err := envPath(id)
	if err != nil {
		return view.Environment{}, err
	}
	err = c.do(ctx, "POST", p+"/rollout/accept", nil, map[string]string{"reason": reason}, &out)
	return view.Environment{ID: out.Env, AppliedRevision: out.Revision, Status: out.Status}, err
}

// StartRun queues a run of an environment and returns its ID.
func (c *Client) StartRun(ctx context.Context, id string, req RunRequest) (string, error) {
	p, err := envPath(id)
	if err != nil {
		return "", err
	}
	var out struct {
		RunID string `json:"runId"`
	}
	err = c.do(ctx, "POST", p+"/runs", nil, req, &out)
	return out.RunID, err
}

// Run returns a run as recorded with its component runs; a run still in
// the queue has status "queued", one the queue refused "refused".
func (c *Client) Run(ctx context.Context, runID string) (view.RunView, error) {
	var wire struct {
		view.Run
		Components []componentRunWire `json:"components"`
	}
	err := c.do(ctx, "GET", "/runs/"+url.PathEscape(runID), nil, nil, &wire)
	v := view.RunView{Run: wire.Run, Components: make([]view.ComponentRun, len(wire.Components))}
	for i, cr := range wire.Components {
		v.Components[i] = cr.componentRun()
	}
	return v, err
}

// CancelRun asks the server to interrupt a run.
func (c *Client) CancelRun(ctx context.Context, runID string) error {
	return c.do(ctx, "POST", "/runs/"+url.PathEscape(runID)+"/cancel", nil, nil, nil)
}

func set(q url.Values, k, v string) {
	if v != "" {
		q.Set(k, v)
	}
}
