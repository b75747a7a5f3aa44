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

// Audit actions of ephemeral environments.
const (
	AuditTTLSet    = "ttl-set"    // the expiry a first apply started
	AuditTTLExtend = "ttl-extend" // a person moved it (knit ttl --extend)
	AuditTTLExpire = "ttl-expire" // knit serve queued the teardown
)

// ErrNoTTL is extending an environment whose applied spec has no ttl.
var ErrNoTTL = fmt.Errorf("%w: the environment has no ttl", store.ErrConflict)

// Expiry is when ref's environment expires (ErrNotFound: it has no
// expiry: no spec.ttl, not applied yet, or torn down).
func (rs *Records) Expiry(ctx context.Context, ref string) (view.TTL, error) {
	k := rs.k
	e, err := k.resolveEnv(ctx, ref)
	if err != nil {
		return view.TTL{}, err
	}
	x, err := k.store.Expiry(ctx, e.ID)
	return ttlRecord(x), err
}

// Expiries lists every environment's expiry (knit serve's ttl controller).
func (rs *Records) Expiries(ctx context.Context) ([]view.TTL, error) {
	k := rs.k
	xs, err := k.store.Expiries(ctx)
	return mapAll(xs, ttlRecord), err
}

// MarkExpiryWarned records that ttl.expiring went out for env's expiry at.
func (s *ServerState) MarkExpiryWarned(ctx context.Context, env string, at time.Time) error {
	k := s.k
	return k.store.MarkExpiryWarned(ctx, env, at)
}

// SyncExpiry brings env's expiry in line with its state after a run: the
// first apply of a spec with a ttl starts it (now + ttl, audited); a
// teardown, or an applied spec without a ttl, clears it. An expiry that
// runs already is kept: only knit ttl --extend moves it.
func (s *ServerState) SyncExpiry(ctx context.Context, env string) error {
	k := s.k
	e, err := k.store.Environment(ctx, env)
	if errors.Is(err, store.ErrNotFound) {
		return nil // a plan of a file never applied records nothing
	} else if err != nil {
		return err
	}
	var ttl time.Duration
	if e.AppliedRevision > 0 && e.Status != engine.EnvTornDown {
		s, err := k.appliedSpec(ctx, e)
		if err != nil {
			return err
		}
		ttl = s.Spec.TTLDuration()
	}
	_, err = k.store.Expiry(ctx, env)
	switch {
	case errors.Is(err, store.ErrNotFound):
		if ttl == 0 || e.Status != engine.EnvApplied {
			return nil
		}
		at := k.now().Add(ttl).UTC()
		return k.store.SetExpiry(ctx, env, at, &store.AuditEvent{Env: env, Actor: "knit", Action: AuditTTLSet,
			Revision: e.AppliedRevision, Detail: fmt.Sprintf("ttl %s: expires at %s", ttl, at.Format(time.RFC3339)), Time: k.now()})
	case err != nil:
		return err
	case ttl == 0:
		return k.store.SetExpiry(ctx, env, time.Time{}, nil)
	}
	return nil
}

// ExtendTTL is the action that moves an ephemeral environment's expiry
// by By (a positive duration within spec.MaxTTL), audited with Actor and
// the new expiry. The environment is resolved as ctx's caller sees it
// (another team's is refused).
type ExtendTTL struct {
	k     *Knit
	Env   string
	By    time.Duration
	Actor string
}

// NewExtendTTL is the ExtendTTL action on k.
func NewExtendTTL(k *Knit, ref string, by time.Duration, actor string) *ExtendTTL {
	return &ExtendTTL{k: k, Env: ref, By: by, Actor: actor}
}

// Run carries the action out.
func (op *ExtendTTL) Run(ctx context.Context) (view.TTL, error) {
	k := op.k
	ref, by, actor := op.Env, op.By, op.Actor
	if by < spec.MinTTL || by > spec.MaxTTL {
		return view.TTL{}, fmt.Errorf("extend by %s: out of bounds (%s to %s)", by, spec.MinTTL, spec.MaxTTL)
	}
	e, err := k.resolveEnv(ctx, ref)
	if err != nil {
		return view.TTL{}, err
	}
	cur, err := k.store.Expiry(ctx, e.ID)
	if errors.Is(err, store.ErrNotFound) {
		return view.TTL{}, fmt.Errorf("%s: %w (set spec.ttl and apply it)", e.ID, ErrNoTTL)
	} else if err != nil {
		return view.TTL{}, err
	}
	// An expiry already past extends from now: the environment gets `by`.
	base := cur.At
	if now := k.now(); base.Before(now) {
		base = now
	}
	at := base.Add(by).UTC()
	err = k.store.SetExpiry(ctx, e.ID, at, &store.AuditEvent{Env: e.ID, Actor: actor, Action: AuditTTLExtend,
		Detail: fmt.Sprintf("extended by %s: expires at %s (was %s)", by, at.Format(time.RFC3339), cur.At.UTC().Format(time.RFC3339)), Time: k.now()})
	if err != nil {
		return view.TTL{}, err
	}
	cur.At = at
	return ttlRecord(cur), nil
}

// ExpiredReason is why an expired environment is torn down, as its
// teardown run and the audit trail record it.
func ExpiredReason(at time.Time) string {
	return "ttl expired at " + at.UTC().Format(time.RFC3339)
}

// AuditExpired records that knit serve queued run (a teardown) of env
// because its expiry at passed.
func (s *ServerState) AuditExpired(ctx context.Context, env string, at time.Time, runID, actor string) error {
	k := s.k
	return k.store.AppendAudit(ctx, store.AuditEvent{Env: env, Actor: actor, Action: AuditTTLExpire, RunID: runID,
		Reason: ExpiredReason(at), Detail: "teardown queued", Time: k.now()})
}
