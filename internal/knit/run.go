package knit

import (
	"context"
	"fmt"
	"time"

	"knit.dev/knit/internal/engine"
	"knit.dev/knit/internal/spec"
)

// NewRunID returns a fresh run ID, for a run that is queued before it starts.
func NewRunID() string { return engine.NewRunID(time.Now()) }

// Run is the action that runs one RunRequest, of any kind (plan, apply,
// drift, teardown, rollback): the one door every run passes, whatever
// starts it (the API, the dashboard, the CLI, GitOps, a schedule, a
// promotion, a resume from either queue). Build it with NewRun; a Run is
// used once.
//
// Its rules, in this order: authorize the caller (Request.Caller, looked
// up again, or ctx's: team, role, who may override a policy) against the
// resolved environment; resolve the revision (a rollback's target, the
// applied one) and the policy set (the Config's, the run's, and for an
// environment GitOps manages the repository's); then the engine judges
// the whole plan, gates, executes and verifies, every write fenced by the
// run's lock; Run adds the after-run rules (an ephemeral environment's
// expiry). A refusal is ErrForbidden and starts nothing. The run kinds
// differ only in Request.Kind: they share this door, never a copy of it.
type Run struct {
	k *Knit
	// Request is the run asked for.
	Request RunRequest
}

// NewRun is the action that runs req on k.
func NewRun(k *Knit, req RunRequest) *Run { return &Run{k: k, Request: req} }

// Start begins the run and returns its handle as soon as it holds the
// environment's lock; the run goes on in the background. Cancelling ctx
// interrupts it, as does Knit.Cancel(run.ID).
func (a *Run) Start(ctx context.Context) (*engine.Run, error) {
	req := a.Request
	ctx, err := a.withCaller(ctx, req)
	if err != nil {
		return nil, err
	}
	if err := a.authorize(ctx, req); err != nil {
		return nil, err
	}
	env, err := a.resolve(ctx, &req)
	if err != nil {
		return nil, err
	}
	if env, err = a.strategy(ctx, &req, env); err != nil {
		return nil, err
	}
	a.Request = req // a rollout's step: what follows it reads the request
	if err := a.envRules(ctx, req, env); err != nil {
		return nil, err
	}
	par := req.Parallelism
	if par <= 0 {
		par = a.k.cfg.Parallelism
	}
	judge, err := a.k.judge(ctx, env, req)
	if err != nil {
		return nil, err
	}
	return a.k.engine.Start(ctx, req.Kind, env, req.options(judge, par))
}

// Run starts the run (Start) and waits for its end.
func (a *Run) Run(ctx context.Context) (*engine.Result, error) {
	r, err := a.Start(ctx)
	if err != nil {
		return nil, err
	}
	<-r.Done()
	res, err := r.Wait(context.Background())
	if res != nil && res.Env != "" && (res.Kind == engine.KindApply || res.Kind == engine.KindTeardown) {
		// An ephemeral environment's first apply starts its expiry; a
		// teardown clears it.
		if xerr := a.k.State().SyncExpiry(context.WithoutCancel(ctx), res.Env); xerr != nil && err == nil {
			err = fmt.Errorf("record the expiry of %s: %w", res.Env, xerr)
		}
	}
	return res, err
}

// resolve is the environment req runs: its Env, the revision a rollback
// goes back to, or the applied revision of EnvRef (filling in req's root
// and origin from it), as ctx's caller may see it.
func (a *Run) resolve(ctx context.Context, req *RunRequest) (*spec.Environment, error) {
	if req.Kind == engine.KindRollback {
		return a.rollbackSpec(ctx, req)
	}
	if req.Env != nil {
		return req.Env, nil
	}
	if req.EnvRef == "" {
		return nil, fmt.Errorf("no environment: pass a file or name a known environment")
	}
	e, err := a.k.resolveEnv(ctx, req.EnvRef)
	if err != nil {
		return nil, err
	}
	env, err := a.k.appliedSpec(ctx, e)
	if err != nil {
		return nil, err
	}
	// The applied revision again: from the same folder and origin.
	if req.Root == "" && req.Origin == "" {
		rev, err := a.k.store.Revision(ctx, e.ID, e.AppliedRevision)
		if err != nil {
			return nil, fmt.Errorf("%s revision %d: %w", e.ID, e.AppliedRevision, err)
		}
		req.Root, req.Origin = rev.Root, rev.Source
	}
	return env, nil
}
