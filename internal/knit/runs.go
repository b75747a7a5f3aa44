package knit

import (
	"context"
	"errors"
	"fmt"
	"time"

	"knit.dev/knit/internal/engine"
	"knit.dev/knit/internal/runner"
	"knit.dev/knit/internal/spec"
	"knit.dev/knit/internal/store"
)

// RunRequest asks for one run.
type RunRequest struct {
	// Kind is engine.KindPlan, KindApply, KindDrift, KindTeardown or
	// KindRollback (of EnvRef, to revision To or its last good one).
	Kind store.RunKind
	// To is, for a rollback, the revision to go back to (0: the newest
	// good one before the applied revision).
	To int
	// Resumes is the interrupted run this one resumes (ResumeRequest). A
	// rollback resuming a rollback goes to To, the revision that run
	// recorded, as it is: that run judged the target when it started.
	Resumes string
	// Env is the environment to run, as loaded from a file or a commit.
	// When nil, EnvRef names a known environment (team/env or its
	// metadata name) and the run uses its applied revision.
	Env    *spec.Environment
	EnvRef string
	// Components limits the run (and what they need); empty means all.
	Components []string
	// Parallelism defaults to the Config's.
	Parallelism int
	AutoApprove bool
	Refresh     bool
	// Reconcile, for a drift run, brings drifted components back, as
	// Policies say per component (spec.DriftReconcile, DriftApprove,
	// DriftAlert; a component not named follows its autoApprove).
	Reconcile bool
	Policies  map[string]string
	// Actor, Reason and Source are recorded with the run and in the audit trail.
	Actor  string
	Reason string
	Source string
	// Confirm asks a person about one component's plan (a terminal "yes").
	Confirm func(component string, p *runner.Plan) bool
	// OnEvent sees every event of the run, in order; a panic in it fails the run.
	OnEvent func(engine.Event)
	// Origin says where Env came from (a file path, URL@commit:path) and
	// Root the folder its relative paths resolve against (a git checkout);
	// Commit, Author and Message describe a git commit. All are kept with
	// the revision an apply records.
	Origin, Root            string
	Commit, Author, Message string
	// RunID, when set, is the ID the run gets (a server hands it out
	// before the run leaves its queue); it must be unique.
	RunID string
	// PolicyDirs are folders of Rego policies that judge the run's plan,
	// beside the Config's; OverridePolicy is why an admin lets a denied
	// run go on (audited).
	PolicyDirs     []string
	OverridePolicy string
	// Tree is the git commit's tree Env was read from (GitOps, a
	// pipeline): its policies/ folder judges the run too, unless the
	// repository's recorded policy set does (see RepoPolicySettings).
	Tree string
	// Caller is who asked for the run, when a person's token did (the API,
	// the dashboard): checked again when the run leaves its queue.
	Caller *Caller `json:",omitempty"`
}

// NewRunID returns a fresh run ID, for a run that is queued before it starts.
func NewRunID() string { return engine.NewRunID(time.Now()) }

// Start begins a run and returns its handle as soon as it holds the
// environment's lock; the run goes on in the background. Cancelling ctx
// interrupts it, as does Cancel(run.ID).
//
// Start is the one door every run passes, whatever starts it (the API,
// the dashboard, the CLI, GitOps, a schedule, a rollback, a resume from
// either queue), in this order: authorize the caller (req.Caller, looked
// up again, or ctx's) against the resolved environment; resolve the
// revision and the policy set (the Config's, the run's, and for an
// environment GitOps manages the repository's); then the engine judges
// the whole plan, gates, executes and verifies; Run adds the after-run
// rules. A refusal is ErrForbidden and starts nothing.
func (k *Knit) Start(ctx context.Context, req RunRequest) (*engine.Run, error) {
	ctx, err := k.withRunCaller(ctx, req)
	if err != nil {
		return nil, err
	}
	if err := k.authorize(ctx, req); err != nil {
		return nil, err
	}
	env, err := k.resolveRun(ctx, &req)
	if err != nil {
		return nil, err
	}
	par := req.Parallelism
	if par <= 0 {
		par = k.cfg.Parallelism
	}
	judge, err := k.judge(ctx, env, req)
	if err != nil {
		return nil, err
	}
	return k.engine.Start(ctx, req.Kind, env, engine.Options{Judge: judge, OverridePolicy: req.OverridePolicy,
		Components: req.Components, Parallelism: par, AutoApprove: req.AutoApprove,
		Confirm: req.Confirm, Refresh: req.Refresh, Reconcile: req.Reconcile, Policies: req.Policies,
		Actor: req.Actor, Reason: req.Reason, Source: req.Source, OnEvent: req.OnEvent, RunID: req.RunID,
		Origin: req.Origin, Root: req.Root, Commit: req.Commit, Author: req.Author, Message: req.Message,
	})
}

// resolveRun is the environment req runs: its Env, the revision a
// rollback goes back to, or the applied revision of EnvRef (filling in
// req's root and origin from it), as ctx's caller may see it.
func (k *Knit) resolveRun(ctx context.Context, req *RunRequest) (*spec.Environment, error) {
	if req.Kind == engine.KindRollback {
		return k.rollbackSpec(ctx, req)
	}
	if req.Env != nil {
		return req.Env, nil
	}
	if req.EnvRef == "" {
		return nil, fmt.Errorf("no environment: pass a file or name a known environment")
	}
	e, err := k.ResolveEnv(ctx, req.EnvRef)
	if err != nil {
		return nil, err
	}
	env, err := k.appliedSpec(ctx, e)
	if err != nil {
		return nil, err
	}
	// The applied revision again: from the same folder and origin.
	if req.Root == "" && req.Origin == "" {
		rev, err := k.store.Revision(ctx, e.ID, e.AppliedRevision)
		if err != nil {
			return nil, fmt.Errorf("%s revision %d: %w", e.ID, e.AppliedRevision, err)
		}
		req.Root, req.Origin = rev.Root, rev.Source
	}
	return env, nil
}

// Run starts a run and waits for its end.
func (k *Knit) Run(ctx context.Context, req RunRequest) (*engine.Result, error) {
	r, err := k.Start(ctx, req)
	if err != nil {
		return nil, err
	}
	<-r.Done()
	res, err := r.Wait(context.Background())
	if res != nil && res.Env != "" && (res.Kind == engine.KindApply || res.Kind == engine.KindTeardown) {
		// An ephemeral environment's first apply starts its expiry; a
		// teardown clears it.
		if xerr := k.SyncExpiry(context.WithoutCancel(ctx), res.Env); xerr != nil && err == nil {
			err = fmt.Errorf("record the expiry of %s: %w", res.Env, xerr)
		}
	}
	return res, err
}

// Lookup finds a running or recently finished run of this process by ID.
func (k *Knit) Lookup(id string) (*engine.Run, bool) { return k.engine.Lookup(id) }

// Cancel interrupts a run of this process by ID.
func (k *Knit) Cancel(id string) error { return k.engine.Cancel(id) }

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
	Approval  store.Approval
	ChangeSet *store.ChangeSet
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

// Decide records a person's decision on a waiting plan or change set,
// with who and why. Decide itself applies nothing: ApproveAndApply is how
// an approval is carried out.
//
// This is the one door every adapter decides through: the environment is
// resolved as ctx's caller sees it (WithCaller), so a team-limited token
// is refused another team's plan or change set (ErrForbidden) however
// EnvRef names it, and a decision without the checksum of what it is
// about is refused (ErrChecksumRequired) before anything is recorded.
func (k *Knit) Decide(ctx context.Context, req DecideRequest) (Decision, error) {
	d, _, err := k.decide(ctx, req)
	return d, err
}

// ApproveAndApply is "approve then apply", the one way the API, the
// dashboard and the CLI carry out a decision: it records req's decision
// as Decide does and, for an approval, hands submit the apply that
// carries it out (it applies the approved plans byte for byte and carries
// on with what waited), returning that run's ID. A rejection, or a nil
// submit (record only: knit approve --no-apply), submits nothing; a
// decision the library refuses submits nothing either. A submit that
// fails returns its error with the decision, which stays recorded.
func (k *Knit) ApproveAndApply(ctx context.Context, req DecideRequest, submit Submitter) (Decision, string, error) {
	d, env, err := k.decide(ctx, req)
	if err != nil || !req.Approve || submit == nil {
		return d, "", err
	}
	runID, err := submit.Enqueue(RunRequest{Kind: engine.KindApply, EnvRef: env, Actor: req.Actor, Reason: req.Reason, Source: req.Source,
		Caller: callerOfCtx(ctx)}, env)
	return d, runID, err
}

// decide records req's decision and returns the environment's ID.
func (k *Knit) decide(ctx context.Context, req DecideRequest) (Decision, string, error) {
	env, rec, err := k.AppliedSpec(ctx, req.EnvRef)
	if err != nil {
		return Decision{}, "", err
	}
	var d Decision
	if req.ChangeChecksum != "" || req.Component == "" {
		d, err = k.decideChange(ctx, env, rec, req)
	} else {
		d, err = k.decidePlan(ctx, env, rec, req)
	}
	return d, rec.ID, err
}

// decidePlan decides one component's waiting plan.
func (k *Knit) decidePlan(ctx context.Context, env *spec.Environment, rec store.Environment, req DecideRequest) (Decision, error) {
	if req.PlanChecksum == "" {
		return Decision{}, fmt.Errorf("%w: %s of %s (knit approvals %s lists the waiting plan and its checksum)",
			ErrChecksumRequired, req.Component, rec.ID, rec.ID)
	}
	a, err := k.store.OpenApproval(ctx, rec.ID, req.Component)
	if err == nil && a.Status == store.ApprovalPending && req.Approve {
		if err := k.checkApprover(ctx, env, rec, a.RunID, a.Component, a.CreatedAt, req.Actor, fmt.Sprintf("approval #%d", a.ID)); err != nil {
			return Decision{Approval: a}, err
		}
	}
	a, err = k.engine.DecidePlan(ctx, env, req.Component, req.PlanChecksum, req.Approve, req.Actor, req.Reason)
	return Decision{Approval: a}, err
}

// decideChange decides the environment's waiting change set.
func (k *Knit) decideChange(ctx context.Context, env *spec.Environment, rec store.Environment, req DecideRequest) (Decision, error) {
	if req.ChangeChecksum == "" {
		return Decision{}, fmt.Errorf("%w: the change set of %s (knit approvals %s lists it and its checksum)",
			ErrChecksumRequired, rec.ID, rec.ID)
	}
	if req.Component != "" {
		return Decision{}, fmt.Errorf("a decision is about a component's plan or the whole change set, not both: leave out %s, or the change set's checksum", req.Component)
	}
	if req.Approve {
		sets, err := k.store.ListChangeSets(ctx, store.ChangeSetFilter{Env: rec.ID, Statuses: []string{store.ChangeSetPending}, Limit: 1})
		if err != nil {
			return Decision{}, err
		}
		if len(sets) == 1 {
			if err := k.checkApprover(ctx, env, rec, sets[0].RunID, "", sets[0].CreatedAt, req.Actor, fmt.Sprintf("change set #%d", sets[0].ID)); err != nil {
				return Decision{}, err
			}
		}
	}
	cs, err := k.engine.DecideChange(ctx, rec.ID, req.ChangeChecksum, req.Approve, req.Actor, req.Reason)
	return Decision{ChangeSet: &cs}, err
}

// checkApprover refuses the author of the change (the actor of the run
// that planned it, a signed commit's verified signer for a run the server
// started from a commit) when the environment requires another approver;
// a change whose author is not verified takes two approvers (see
// otherApprover).
func (k *Knit) checkApprover(ctx context.Context, env *spec.Environment, rec store.Environment, runID, component string, since time.Time, actor, what string) error {
	if env.Spec.Approval == nil || !env.Spec.Approval.RequireOtherApprover {
		return nil
	}
	r, err := k.store.Run(ctx, runID)
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	return k.otherApprover(ctx, rec.ID, r, component, since, actor, what)
}

// ChangeSets lists an environment's change sets ("" = every environment
// the caller sees), newest first, with a status among statuses (none:
// any), at most n (<= 0: all).
func (k *Knit) ChangeSets(ctx context.Context, ref string, n int, statuses ...string) ([]store.ChangeSet, error) {
	f := store.ChangeSetFilter{Statuses: statuses, Teams: callerTeams(ctx), Limit: n}
	if ref != "" {
		e, err := k.ResolveEnv(ctx, ref)
		if err != nil {
			return nil, err
		}
		f.Env = e.ID
	}
	return k.store.ListChangeSets(ctx, f)
}
