package knit

import (
	"context"
	"errors"
	"fmt"
	"time"

	"knit.dev/knit/internal/engine"
	"knit.dev/knit/internal/spec"
	"knit.dev/knit/internal/store"
	"knit.dev/knit/internal/view"
)

// DecideRequest approves or rejects a waiting plan: a component's (by
// Component and PlanChecksum) or the whole change set of the environment
// (by ChangeChecksum).
type DecideRequest struct {
	EnvRef    string
	Component string
	Approve   bool
	Actor     string
	Reason    string
	// Source says through what the decision came ("cli", "api",
	// "dashboard"), for the apply that carries it out.
	Source string
	// PlanChecksum is required for a component's plan and must be the
	// waiting plan's: a person approves the plan they saw, not a newer one
	// (ErrChecksumRequired when empty, ErrChecksumMismatch when another
	// plan waits).
	PlanChecksum string
	// ChangeChecksum, instead of Component and PlanChecksum, decides the
	// environment's waiting change set with that checksum (or its first
	// 12 characters or more): every plan in it at once.
	ChangeChecksum string
}

// Decision is a recorded decision: the component's approval or the change
// set decided.
type Decision struct {
	Approval  view.Approval
	ChangeSet *view.ChangeSet
	// RunID is the apply Decide.Submit was handed for an approval ("":
	// none submitted).
	RunID string
}

// Submitter starts or queues a run of env and returns its ID: knit
// serve's run queue, or the CLI running it in the foreground.
type Submitter interface {
	Enqueue(req RunRequest, env string) (runID string, err error)
}

// ErrChecksumRequired: a decision did not name the plan it is about.
var ErrChecksumRequired = engine.ErrChecksumRequired

// ErrChecksumMismatch: the plan waiting for approval is not the one named.
var ErrChecksumMismatch = engine.ErrChecksumMismatch

// ErrSelfApproval: the environment requires an approver other than the
// author of the change.
var ErrSelfApproval = errors.New("the author of a change may not approve it")

// Decide is the action that records a person's decision on a waiting
// plan or change set, with who and why, and for an approval carries it
// out: "approve then apply", the one way the API, the dashboard, the CLI
// and the Kubernetes controller decide.
//
// It passes these rules: the environment is resolved as ctx's caller sees
// it (WithCaller), so a team-limited token is refused another team's plan
// or change set (ErrForbidden) however EnvRef names it; a decision without
// the checksum of what it is about is refused (ErrChecksumRequired), as
// is one about a newer plan than the one named (ErrChecksumMismatch);
// requireOtherApprover refuses the change's author (ErrSelfApproval) and
// takes two approvers for a change nobody vouches for
// (ErrSecondApprover): all before anything is recorded. The apply it
// submits passes the one door (Run) as every run does, with ctx's caller.
type Decide struct {
	k *Knit
	// Request is the decision.
	Request DecideRequest
	// Submit, for an approval, is handed the apply that carries it out
	// (it applies the approved plans byte for byte and carries on with
	// what waited); nil records only (knit approve --no-apply).
	Submit Submitter
}

// NewDecide is the action that decides req on k, handing an approval's
// apply to submit (nil: record only).
func NewDecide(k *Knit, req DecideRequest, submit Submitter) *Decide {
	return &Decide{k: k, Request: req, Submit: submit}
}

// Run records the decision and, for an approval with a Submit, submits
// the apply (Decision.RunID). A rejection or a refused decision submits
// nothing. A submit that fails returns its error with the decision,
// which stays recorded.
func (a *Decide) Run(ctx context.Context) (Decision, error) {
	req := a.Request
	rec, err := a.k.resolveEnv(ctx, req.EnvRef)
	if err != nil {
		return Decision{}, err
	}
	env, err := a.k.appliedSpec(ctx, rec)
	if err != nil {
		return Decision{}, err
	}
	var d Decision
	if req.ChangeChecksum != "" || req.Component == "" {
		d, err = a.decideChange(ctx, env, rec, req)
	} else {
		d, err = a.decidePlan(ctx, env, rec, req)
	}
	if err != nil || !req.Approve || a.Submit == nil {
		return d, err
	}
	d.RunID, err = a.Submit.Enqueue(RunRequest{Kind: engine.KindApply, EnvRef: rec.ID, Actor: req.Actor, Reason: req.Reason, Source: req.Source,
		Caller: callerOfCtx(ctx)}, rec.ID)
	return d, err
}

// decidePlan decides one component's waiting plan.
func (d *Decide) decidePlan(ctx context.Context, env *spec.Environment, rec store.Environment, req DecideRequest) (Decision, error) {
	if req.PlanChecksum == "" {
		return Decision{}, fmt.Errorf("%w: %s of %s (knit approvals %s lists the waiting plan and its checksum)",
			ErrChecksumRequired, req.Component, rec.ID, rec.ID)
	}
	a, err := d.k.store.OpenApproval(ctx, rec.ID, req.Component)
	if err == nil && a.Status == store.ApprovalPending && req.Approve {
		if err := d.checkApprover(ctx, env, rec, a.RunID, a.Component, a.CreatedAt, req.Actor, fmt.Sprintf("approval #%d", a.ID)); err != nil {
			return Decision{Approval: approvalRecord(a)}, err
		}
	}
	a, err = d.k.engine.DecidePlan(ctx, env, req.Component, req.PlanChecksum, req.Approve, req.Actor, req.Reason)
	return Decision{Approval: approvalRecord(a)}, err
}

// decideChange decides the environment's waiting change set.
func (a *Decide) decideChange(ctx context.Context, env *spec.Environment, rec store.Environment, req DecideRequest) (Decision, error) {
	if req.ChangeChecksum == "" {
		return Decision{}, fmt.Errorf("%w: the change set of %s (knit approvals %s lists it and its checksum)",
			ErrChecksumRequired, rec.ID, rec.ID)
	}
	if req.Component != "" {
		return Decision{}, fmt.Errorf("a decision is about a component's plan or the whole change set, not both: leave out %s, or the change set's checksum", req.Component)
	}
	if req.Approve {
		sets, err := a.k.store.ListChangeSets(ctx, store.ChangeSetFilter{Env: rec.ID, Statuses: []string{store.ChangeSetPending}, Limit: 1})
		if err != nil {
			return Decision{}, err
		}
		if len(sets) == 1 {
			if err := a.checkApprover(ctx, env, rec, sets[0].RunID, "", sets[0].CreatedAt, req.Actor, fmt.Sprintf("change set #%d", sets[0].ID)); err != nil {
				return Decision{}, err
			}
		}
	}
	cs, err := a.k.engine.DecideChange(ctx, rec.ID, req.ChangeChecksum, req.Approve, req.Actor, req.Reason)
	v := changeSetRecord(cs)
	return Decision{ChangeSet: &v}, err
}

// checkApprover refuses the author of the change (the actor of the run
// that planned it, a signed commit's verified signer for a run the server
// started from a commit) when the environment requires another approver;
// a change whose author is not verified takes two approvers (see
// otherApprover).
func (a *Decide) checkApprover(ctx context.Context, env *spec.Environment, rec store.Environment, runID, component string, since time.Time, actor, what string) error {
	if env.Spec.Approval == nil || !env.Spec.Approval.RequireOtherApprover {
		return nil
	}
	r, err := a.k.store.Run(ctx, runID)
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	return a.otherApprover(ctx, rec.ID, r, component, since, actor, what)
}
