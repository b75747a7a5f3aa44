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
	// Kind is engine.KindPlan, KindApply, KindDrift or KindTeardown.
	Kind string
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
}

// NewRunID returns a fresh run ID, for a run that is queued before it starts.
func NewRunID() string { return engine.NewRunID(time.Now()) }

// Start begins a run and returns its handle as soon as it holds the
// environment's lock; the run goes on in the background. Cancelling ctx
// interrupts it, as does Cancel(run.ID).
func (k *Knit) Start(ctx context.Context, req RunRequest) (*engine.Run, error) {
	env := req.Env
	if env == nil {
		if req.EnvRef == "" {
			return nil, fmt.Errorf("no environment: pass a file or name a known environment")
		}
		e, err := k.ResolveEnv(ctx, req.EnvRef)
		if err != nil {
			return nil, err
		}
		if env, err = k.appliedSpec(ctx, e); err != nil {
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
	}
	par := req.Parallelism
	if par <= 0 {
		par = k.cfg.Parallelism
	}
	return k.engine.Start(ctx, req.Kind, env, engine.Options{
		Components: req.Components, Parallelism: par, AutoApprove: req.AutoApprove,
		Confirm: req.Confirm, Refresh: req.Refresh, Reconcile: req.Reconcile, Policies: req.Policies,
		Actor: req.Actor, Reason: req.Reason, Source: req.Source, OnEvent: req.OnEvent, RunID: req.RunID,
		Origin: req.Origin, Root: req.Root, Commit: req.Commit, Author: req.Author, Message: req.Message,
	})
}

// Run starts a run and waits for its end.
func (k *Knit) Run(ctx context.Context, req RunRequest) (*engine.Result, error) {
	r, err := k.Start(ctx, req)
	if err != nil {
		return nil, err
	}
	<-r.Done()
	return r.Wait(context.Background())
}

// Lookup finds a running or recently finished run of this process by ID.
func (k *Knit) Lookup(id string) (*engine.Run, bool) { return k.engine.Lookup(id) }

// Cancel interrupts a run of this process by ID.
func (k *Knit) Cancel(id string) error { return k.engine.Cancel(id) }

// DecideRequest approves or rejects the plan a component waits with.
type DecideRequest struct {
	EnvRef    string
	Component string
	Approve   bool
	Actor     string
	Reason    string
	// PlanChecksum is required and must be the waiting plan's: a person
	// approves the plan they saw, not a newer one (ErrChecksumRequired when
	// empty, ErrChecksumMismatch when another plan waits).
	PlanChecksum string
}

// ErrChecksumRequired: a decision did not name the plan it is about.
var ErrChecksumRequired = errors.New("a decision must name the checksum of the plan it is about")

// ErrChecksumMismatch: the plan waiting for approval is not the one named.
var ErrChecksumMismatch = engine.ErrChecksumMismatch

// ErrSelfApproval: the environment requires an approver other than the
// author of the change.
var ErrSelfApproval = errors.New("the author of a change may not approve it")

// Decide records a person's decision on a waiting plan, with who and why.
// It applies nothing: start an apply of the environment (EnvRef) to apply
// the approved plan byte for byte and carry on with what waited.
//
// This is the one door every adapter decides through: the environment is
// resolved as ctx's caller sees it (WithCaller), so a team-limited token
// is refused another team's plan (ErrForbidden) however EnvRef names it,
// and a decision without the plan's checksum is refused
// (ErrChecksumRequired) before anything is recorded.
func (k *Knit) Decide(ctx context.Context, req DecideRequest) (store.Approval, error) {
	env, rec, err := k.AppliedSpec(ctx, req.EnvRef)
	if err != nil {
		return store.Approval{}, err
	}
	if req.PlanChecksum == "" {
		return store.Approval{}, fmt.Errorf("%w: %s of %s (knit approvals %s lists the waiting plan and its checksum)",
			ErrChecksumRequired, req.Component, rec.ID, rec.ID)
	}
	a, err := k.store.OpenApproval(ctx, rec.ID, req.Component)
	if err == nil && a.Status == store.ApprovalPending {
		if req.Approve && env.Spec.Approval != nil && env.Spec.Approval.RequireOtherApprover {
			author, err := k.author(ctx, a)
			if err != nil {
				return a, err
			}
			if author == req.Actor {
				return a, fmt.Errorf("%w: %s made the change that approval #%d is for, and %s requires another approver",
					ErrSelfApproval, author, a.ID, rec.ID)
			}
		}
	}
	return k.engine.DecidePlan(ctx, env, req.Component, req.PlanChecksum, req.Approve, req.Actor, req.Reason)
}

// author is who made the change an approval is for: the actor of the run
// that planned it (a git commit's author, for a run the server started
// from a commit).
func (k *Knit) author(ctx context.Context, a store.Approval) (string, error) {
	r, err := k.store.Run(ctx, a.RunID)
	if err != nil {
		return "", fmt.Errorf("approval #%d: %w", a.ID, err)
	}
	return r.Actor, nil
}
