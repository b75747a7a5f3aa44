package knit

import (
	"context"
	"errors"
	"fmt"

	"knit.dev/knit/internal/engine"
	"knit.dev/knit/internal/spec"
	"knit.dev/knit/internal/store"
	"knit.dev/knit/internal/view"
)

// ErrNoGoodRevision: a rollback was asked for, and no earlier revision of
// the environment passed verification to go back to. Nothing is changed.
var ErrNoGoodRevision = errors.New("no revision to roll back to")

// ErrNotPaused: knit approve was asked to accept a revision, and the
// environment's rollout is not paused.
var ErrNotPaused = errors.New("the environment's rollout is not paused")

// rollbackSpec is the spec a rollback run (req.Kind KindRollback) of
// req.EnvRef applies: revision req.To, or else the newest good revision
// (store.Revision.Good) below the applied one. It fills in req's origin,
// root and, when the applied spec's rollout says so, AutoApprove (the
// destroys of components the failed revision added go on without asking).
// With nothing to go back to, it is ErrNoGoodRevision and nothing runs.
func (a *Run) rollbackSpec(ctx context.Context, req *RunRequest) (*spec.Environment, error) {
	ref := req.EnvRef
	if ref == "" && req.Env != nil {
		ref = req.Env.ID()
	}
	e, err := a.k.resolveEnv(ctx, ref)
	if err != nil {
		return nil, err
	}
	to, err := a.targetOf(ctx, e, *req)
	if err != nil {
		return nil, err
	}
	env, err := a.k.revisionSpec(ctx, e.ID, to.Number)
	if err != nil {
		return nil, err
	}
	if applied, err := a.k.appliedSpec(ctx, e); err == nil && applied.Spec.Rollout != nil && applied.Spec.Rollout.AutoApprove {
		req.AutoApprove = true
	}
	if req.Reason == "" {
		req.Reason = fmt.Sprintf("rollback of revision %d to revision %d", e.AppliedRevision, to.Number)
	}
	req.Env, req.Root, req.Origin = env, to.Root, to.Source
	req.Commit, req.Author, req.Message = to.Commit, to.Author, to.Message
	return env, nil
}

// RollbackTarget is the revision a rollback of ref goes back to: to
// (> 0), or else the newest good revision below the applied one. Nothing
// to go back to is ErrNoGoodRevision.
func (rs *Records) RollbackTarget(ctx context.Context, ref string, to int) (view.Revision, error) {
	k := rs.k
	e, err := k.resolveEnv(ctx, ref)
	if err != nil {
		return view.Revision{}, err
	}
	r, err := k.rollbackTarget(ctx, e, to)
	return revisionRecord(r), err
}

// targetOf is the revision the rollback req goes to: for a resume, the
// one the rollback it resumes recorded (resumedTarget), else
// rollbackTarget's.
func (a *Run) targetOf(ctx context.Context, e store.Environment, req RunRequest) (store.Revision, error) {
	if req.Resumes == "" {
		return a.k.rollbackTarget(ctx, e, req.To)
	}
	return a.resumedTarget(ctx, e, req)
}

// resumedTarget is revision req.To, which the interrupted rollback
// req.Resumes recorded (the target's spec) before it changed anything:
// its resume goes there again as it is, applied already or not (the
// rules of rollbackTarget judged it when that rollback started; the
// copy it recorded is newer than the bad revision and not verified).
// Anything else (not a rollback of e, another revision) is refused.
func (a *Run) resumedTarget(ctx context.Context, e store.Environment, req RunRequest) (store.Revision, error) {
	r, err := a.k.store.Run(ctx, req.Resumes)
	if err != nil {
		return store.Revision{}, fmt.Errorf("the rollback run %s resumes: %w", req.Resumes, err)
	}
	if r.Kind != engine.KindRollback || r.Env != e.ID || r.Revision == 0 || r.Revision != req.To {
		return store.Revision{}, fmt.Errorf("%w: run %s is a %s of %s that recorded revision %d, not a rollback of %s to revision %d: a resume goes only where the rollback it resumes went",
			ErrNoGoodRevision, r.ID, r.Kind, r.Env, r.Revision, e.ID, req.To)
	}
	return a.k.revision(ctx, e.ID, req.To)
}

func (k *Knit) rollbackTarget(ctx context.Context, e store.Environment, to int) (store.Revision, error) {
	if e.AppliedRevision == 0 {
		return store.Revision{}, fmt.Errorf("%w: %s was never applied", ErrNoGoodRevision, e.ID)
	}
	if to > 0 {
		if to == e.AppliedRevision {
			return store.Revision{}, fmt.Errorf("%w: %s is applied at revision %d already", ErrNoGoodRevision, e.ID, to)
		}
		r, err := k.revision(ctx, e.ID, to)
		if err != nil {
			return r, err
		}
		return r, goodTarget(e, r)
	}
	r, err := k.store.LastGoodRevision(ctx, e.ID, e.AppliedRevision)
	if errors.Is(err, store.ErrNotFound) {
		return r, fmt.Errorf("%w: no revision of %s before revision %d passed verification (knit history %s lists them; --to REV picks one)",
			ErrNoGoodRevision, e.ID, e.AppliedRevision, e.ID)
	}
	return r, err
}

// goodTarget refuses, as a rollback's target, a revision that is not one
// to go back to: newer than the applied one, invalid, or never applied
// and verified (denied by policy, failed, still unverified). What it
// says names the revisions that are.
func goodTarget(e store.Environment, r store.Revision) error {
	hint := fmt.Sprintf("knit history %s lists the revisions and their verification; knit rollback %s without --to goes back to the last good one", e.ID, e.ID)
	switch {
	case r.Number > e.AppliedRevision:
		return fmt.Errorf("%w: revision %d of %s is newer than its applied revision %d; a rollback goes back, never forward (%s)",
			ErrNoGoodRevision, r.Number, e.ID, e.AppliedRevision, hint)
	case r.Errors != "":
		return fmt.Errorf("%w: revision %d of %s does not validate (%s)", ErrNoGoodRevision, r.Number, e.ID, hint)
	case !r.Good():
		verified := "was never applied and verified"
		if r.Verification != "" {
			verified = "did not pass verification (" + r.Verification + ")"
		}
		return fmt.Errorf("%w: revision %d of %s %s: a rollback goes only to a revision that applied and verified (%s)",
			ErrNoGoodRevision, r.Number, e.ID, verified, hint)
	}
	return nil
}

// Accept is the action of a person accepting a paused rollout (knit
// approve ENV): the applied revision becomes good, as if its verification
// had succeeded, and the environment applied; audited as
// rollout-accepted, in the one transaction of RecordVerification. The
// environment is resolved as ctx's caller sees it (another team's is
// refused). An environment that is not paused is ErrNotPaused, and
// nothing changes.
type Accept struct {
	k      *Knit
	Env    string
	Actor  string
	Reason string
}

// NewAccept is the Accept action on k.
func NewAccept(k *Knit, ref string, actor string, reason string) *Accept {
	return &Accept{k: k, Env: ref, Actor: actor, Reason: reason}
}

// Run carries the action out.
func (op *Accept) Run(ctx context.Context) (view.Environment, error) {
	k := op.k
	ref, actor, reason := op.Env, op.Actor, op.Reason
	e, err := k.resolveEnv(ctx, ref)
	if err != nil {
		return envRecord(e), err
	}
	if e.Status != store.EnvPaused {
		return envRecord(e), fmt.Errorf("%w: %s is %s (knit approvals %s lists what waits)", ErrNotPaused, e.ID, engine.EnvLabel(e.Status), e.ID)
	}
	rev, err := k.store.Revision(ctx, e.ID, e.AppliedRevision)
	if err != nil {
		return envRecord(e), err
	}
	err = k.store.RecordVerification(ctx, store.VerificationDecision{Env: e.ID, Revision: rev.Number,
		Verification: store.VerificationAccepted, From: rev.Verification, EnvStatus: store.EnvApplied,
		Audit: &store.AuditEvent{Env: e.ID, Actor: actor, Action: "rollout-accepted", Revision: rev.Number, Reason: reason,
			Detail: fmt.Sprintf("revision %d accepted after its verification was %s", rev.Number, rev.Verification)}})
	if err != nil {
		return envRecord(e), err
	}
	e, err = k.store.Environment(ctx, e.ID)
	return envRecord(e), err
}
