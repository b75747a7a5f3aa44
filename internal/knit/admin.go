package knit

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"knit.dev/knit/internal/procexec"
	"knit.dev/knit/internal/store"
	"knit.dev/knit/internal/view"
)

// Recover is the action that marks the runs a crashed knit left running
// as interrupted (their process is gone: an exited PID, or one on this
// host that no longer exists), ends the tools they left running
// (engine.EndLeftTools), and returns the environments they belonged to, so
// a server can reconcile them to completion (through the queue and the one
// door, Run). Runs of live processes (a CLI run on the same data dir) are
// left alone. It is the server's own at start-up (no caller to
// authorize); it starts no run itself.
type Recover struct {
	k *Knit
}

// NewRecover is the Recover action on k.
func NewRecover(k *Knit) *Recover {
	return &Recover{k: k}
}

// Run carries the action out.
func (op *Recover) Run(ctx context.Context) ([]string, error) {
	k := op.k
	running, err := k.store.Runs(ctx, "", store.RunFilter{Status: store.StatusRunning})
	if err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	var envs []string
	for _, r := range running {
		if seen[r.Env] {
			continue
		}
		if l, err := k.store.Lock(ctx, r.Env); err == nil && l.RunID == r.ID && l.Host == k.cfg.Host && l.PID != k.cfg.PID && procexec.Alive(l.PID) {
			continue // its knit is alive: not ours to recover
		}
		ids, err := k.store.InterruptRuns(ctx, r.Env, func(pid int) bool { return pid != k.cfg.PID && procexec.Alive(pid) }, k.now())
		if err != nil {
			return envs, err
		}
		if len(ids) > 0 {
			seen[r.Env] = true
			envs = append(envs, r.Env)
		}
		if err := k.engine.EndLeftTools(ctx, r.Env, func(id string) (bool, error) { return op.runOver(ctx, id) }); err != nil {
			return envs, err
		}
	}
	return envs, nil
}

// runOver reports whether a run is no longer running (or unknown): the
// tools it left are leftovers to end.
func (op *Recover) runOver(ctx context.Context, id string) (bool, error) {
	r, err := op.k.store.Run(ctx, id)
	if errors.Is(err, store.ErrNotFound) {
		return true, nil
	}
	return err == nil && r.Status != store.StatusRunning, err
}

// Unlock is the action that frees an environment's lock whoever holds it
// (a stuck run): a run of this process is cancelled first, the lock's run
// is recorded interrupted, and the unlock is audited with who and why.
// The environment is resolved as ctx's caller sees it (another team's is
// ErrForbidden or not found); the server's route takes an admin token.
// An environment that is not locked is ErrNotFound.
type Unlock struct {
	k      *Knit
	Env    string
	Actor  string
	Reason string
}

// NewUnlock is the Unlock action on k.
func NewUnlock(k *Knit, ref string, actor string, reason string) *Unlock {
	return &Unlock{k: k, Env: ref, Actor: actor, Reason: reason}
}

// Run carries the action out.
func (op *Unlock) Run(ctx context.Context) (view.Lock, error) {
	k := op.k
	ref, actor, reason := op.Env, op.Actor, op.Reason
	e, err := k.resolveEnv(ctx, ref)
	if err != nil {
		return view.Lock{}, err
	}
	l, err := k.store.Lock(ctx, e.ID)
	if errors.Is(err, store.ErrNotFound) {
		return lockRecord(l), fmt.Errorf("%w: %s is not locked", ErrNotFound, e.ID)
	}
	if err != nil {
		return lockRecord(l), err
	}
	if r, ok := k.engine.Lookup(l.RunID); ok {
		r.Cancel()
		<-r.Done()
	}
	if err := k.store.ReleaseLock(ctx, e.ID, l.RunID); err != nil {
		return lockRecord(l), err
	}
	if _, err := k.store.InterruptRuns(ctx, e.ID, func(int) bool { return false }, k.now()); err != nil {
		return lockRecord(l), err
	}
	err = k.store.AppendAudit(ctx, store.AuditEvent{Env: e.ID, Actor: actor, Action: "unlock", RunID: l.RunID, Reason: reason,
		Detail: fmt.Sprintf("lock of run %s (%s, pid %d on %s) released", l.RunID, l.Owner, l.PID, l.Host), Time: k.now()})
	return lockRecord(l), err
}

// AuditRevealOutputs is the audit action of a reveal of sensitive outputs.
const AuditRevealOutputs = "reveal-outputs"

// Reveal is the action that returns outputs with sensitive values in
// clear, and records who saw them in the audit trail first: it is the one
// way any adapter (the API, the local CLI on either store) shows a
// secret, so every reveal leaves an entry, and none is shown when the
// entry cannot be written. A caller's token (WithCaller) must be an
// admin's (ErrForbidden), and the environment is resolved as the caller
// sees it; Actor is the name audited (the token's, else the local user's).
type Reveal struct {
	k         *Knit
	Env       string
	Component string
	Actor     string
}

// NewReveal is the Reveal action on k.
func NewReveal(k *Knit, ref string, component string, actor string) *Reveal {
	return &Reveal{k: k, Env: ref, Component: component, Actor: actor}
}

// Run carries the action out.
func (op *Reveal) Run(ctx context.Context) (map[string]map[string]OutputView, error) {
	k := op.k
	ref, component, actor := op.Env, op.Component, op.Actor
	if t, ok := caller(ctx); ok && !t.Role.AtLeast(store.RoleAdmin) {
		return nil, fmt.Errorf("%w: revealing sensitive outputs needs an admin token", ErrForbidden)
	}
	e, err := k.resolveEnv(ctx, ref)
	if err != nil {
		return nil, err
	}
	outs, err := k.outputs(ctx, e, component, true)
	if err != nil {
		return nil, err
	}
	if err := k.store.AppendAudit(ctx, store.AuditEvent{Env: e.ID, Actor: actor, Action: AuditRevealOutputs, Component: component, Time: k.now()}); err != nil {
		return nil, fmt.Errorf("record the reveal in the audit trail: %w", err)
	}
	return outs, nil
}

// RecordInvalid is the action that records a file that does not validate
// as a revision of its environment (created if new) with its
// errors, and audits it. It changes nothing that runs: the applied
// revision stays where it is, and no run passes the door. Run returns nil
// when the environment's newest revision already is this invalid file
// (the same content): nothing new to tell. It is GitOps' (the server's
// own, no caller to authorize).
type RecordInvalid struct {
	k *Knit
	// env and rev are store records GitOps hands in (the store's rows stay
	// inside the library: see TestNoMethodReturnsTheStore).
	env   store.Environment
	rev   store.Revision
	Actor string
}

// NewRecordInvalid is the RecordInvalid action on k.
func NewRecordInvalid(k *Knit, env store.Environment, rev store.Revision, actor string) *RecordInvalid {
	return &RecordInvalid{k: k, env: env, rev: rev, Actor: actor}
}

// Run carries the action out.
func (op *RecordInvalid) Run(ctx context.Context) (*InvalidRevision, error) {
	k := op.k
	env, rev, actor := op.env, op.rev, op.Actor
	if rev.Errors == "" {
		return nil, fmt.Errorf("record invalid revision of %s: no errors given", env.ID)
	}
	if cur, err := k.store.Environment(ctx, env.ID); err == nil && cur.Revision > 0 {
		latest, err := k.store.Revision(ctx, env.ID, cur.Revision)
		if err != nil {
			return nil, err
		}
		if latest.Hash == rev.Hash && latest.Errors != "" {
			return nil, nil
		}
	} else if err != nil && !errors.Is(err, store.ErrNotFound) {
		return nil, err
	}
	r, err := k.store.PutRevision(ctx, env, rev)
	if err != nil {
		return nil, err
	}
	err = k.store.AppendAudit(ctx, store.AuditEvent{Env: env.ID, Actor: actor, Action: "invalid-revision", Revision: r.Number,
		Reason: rev.Message, Detail: firstLines(rev.Errors, 5), Time: k.now()})
	if err != nil {
		return nil, err
	}
	return invalidRevision(r), nil
}

func firstLines(s string, n int) string {
	lines := strings.SplitN(s, "\n", n+1)
	if len(lines) > n {
		lines = append(lines[:n], "…")
	}
	return strings.Join(lines, "\n")
}
