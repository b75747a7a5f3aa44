package knit

import (
	"context"
	"fmt"

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
	// Reconcile, for a drift run, brings drifted components back.
	Reconcile bool
	// Actor, Reason and Source are recorded with the run and in the audit trail.
	Actor  string
	Reason string
	Source string
	// Confirm asks a person about one component's plan (a terminal "yes").
	Confirm func(component string, p *runner.Plan) bool
	// OnEvent sees every event of the run, in order; a panic in it fails the run.
	OnEvent func(engine.Event)
}

// Start begins a run and returns its handle as soon as it holds the
// environment's lock; the run goes on in the background. Cancelling ctx
// interrupts it, as does Cancel(run.ID).
func (k *Knit) Start(ctx context.Context, req RunRequest) (*engine.Run, error) {
	env := req.Env
	if env == nil {
		if req.EnvRef == "" {
			return nil, fmt.Errorf("no environment: pass a file or name a known environment")
		}
		var err error
		if env, _, err = k.AppliedSpec(ctx, req.EnvRef); err != nil {
			return nil, err
		}
	}
	par := req.Parallelism
	if par <= 0 {
		par = k.cfg.Parallelism
	}
	return k.engine.Start(ctx, req.Kind, env, engine.Options{
		Components: req.Components, Parallelism: par, AutoApprove: req.AutoApprove,
		Confirm: req.Confirm, Refresh: req.Refresh, Reconcile: req.Reconcile,
		Actor: req.Actor, Reason: req.Reason, Source: req.Source, OnEvent: req.OnEvent,
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
}

// Decide records a person's decision on a waiting plan, with who and why.
// It applies nothing: start an apply of the environment (EnvRef) to apply
// the approved plan byte for byte and carry on with what waited.
func (k *Knit) Decide(ctx context.Context, req DecideRequest) (store.Approval, error) {
	env, _, err := k.AppliedSpec(ctx, req.EnvRef)
	if err != nil {
		return store.Approval{}, err
	}
	return k.engine.Decide(ctx, env, req.Component, req.Approve, req.Actor, req.Reason)
}
