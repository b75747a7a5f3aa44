package engine

import (
	"context"
	"errors"
	"fmt"
	"time"

	"knit.dev/knit/internal/procexec"
	"knit.dev/knit/internal/spec"
	"knit.dev/knit/internal/store"
)

// begin takes the lock, marks runs left by a crashed knit as interrupted,
// records the revision an apply or teardown converges to, and creates the
// run record. On any failure nothing is left held.
func (e *Engine) begin(ctx context.Context, env *spec.Environment, kind store.RunKind, opts Options) (_ *session, err error) {
	now := e.now()
	s := newSession(ctx, e, env, kind, opts, now)
	if err := s.lockEnv(ctx, now); err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			s.handle.cancel(err)
			err = joinErrs([]error{err, s.release()})
		}
	}()
	rev, err := s.load(ctx, now)
	if err != nil {
		return nil, err
	}
	if err := s.create(ctx, rev, now); err != nil {
		return nil, err
	}
	s.publish(Event{Kind: RunStarted, Time: now, RunKind: kind})
	return s, nil
}

// release frees the lock the run holds (begin took it).
func (s *session) release() error { return s.lock.release(false) }

// newSession is a run of kind on env (a teardown's: as it leaves env) with
// its handle and collaborators, holding nothing yet.
func newSession(ctx context.Context, e *Engine, env *spec.Environment, kind store.RunKind, opts Options, now time.Time) *session {
	runID := opts.RunID
	if runID == "" {
		runID = NewRunID(now)
	}
	runCtx, cancel := context.WithCancelCause(ctx)
	if kind == KindTeardown {
		env = tornDown(env, opts.Components)
	}
	s := &session{e: e, env: env, kind: kind, opts: opts, db: context.WithoutCancel(ctx)}
	s.wire()
	s.handle = &Run{ID: runID, Env: env.ID(), Kind: kind, log: newEventLog(e.EventRetention), cancel: cancel, done: make(chan struct{})}
	// Every tool the run starts is recorded while it runs (toolTracker).
	s.handle.ctx = procexec.WithTracker(runCtx, toolTracker{e: e, db: s.db, run: runID, env: env.ID()})
	return s
}

// lockEnv takes the environment's lock for the run, which a lost lease
// cancels. A lock another run holds is refused, and the refusal is all
// such a run records.
func (s *session) lockEnv(ctx context.Context, now time.Time) error {
	held, err := s.e.lock(ctx, s.env.ID(), s.handle.ID, s.opts.Actor, func(why error) { s.handle.cancel(why) })
	if err == nil {
		s.lock = held
		return nil
	}
	s.handle.cancel(err)
	if errors.Is(err, ErrLocked) {
		if aerr := s.e.Store.AppendAudit(s.db, store.AuditEvent{Env: s.env.ID(), Actor: s.opts.Actor, Action: "refused",
			Reason: s.opts.Reason, Detail: err.Error(), Time: now}); aerr != nil {
			err = joinErrs([]error{err, fmt.Errorf("record the refusal: %w", aerr)})
		}
	}
	return err
}

// load, once the run holds the lock, ends what a crashed knit left
// running, prepares the revision an apply or teardown converges to (create
// records it with the run) or finds the applied one a plan or drift check
// is (returned), and reads what the run starts from: the components'
// states, the open approvals and the components removed from the file.
func (s *session) load(ctx context.Context, now time.Time) (int, error) {
	// Every run holds the lock, and now we do: a run of this environment
	// still recorded as running belongs to a knit that died, and so does
	// any tool still recorded. Those tools are ended before anything runs.
	id := s.env.ID()
	if err := s.e.EndLeftTools(ctx, id, func(string) (bool, error) { return true, nil }); err != nil {
		return 0, fmt.Errorf("end the tools a crashed knit left running: %w", err)
	}
	dead := func(int) bool { return false }
	if _, err := s.e.Store.InterruptRuns(ctx, id, dead, now); err != nil {
		return 0, fmt.Errorf("recover crashed runs: %w", err)
	}
	rev, err := s.revisions.revision(ctx, now)
	if err != nil {
		return 0, err
	}
	if s.states, err = s.e.Store.ComponentStates(ctx, id); err != nil {
		return 0, fmt.Errorf("read component states: %w", err)
	}
	s.exportsBefore = exportedValues(s.env, s.states)
	open, err := s.e.Store.ListApprovals(ctx, store.ApprovalFilter{Env: id, Statuses: []string{store.ApprovalPending, store.ApprovalApproved}})
	if err != nil {
		return 0, fmt.Errorf("read open approvals: %w", err)
	}
	s.approvals.opened(open)
	if s.kind != KindDrift {
		if err := s.removed.add(ctx); err != nil {
			return 0, err
		}
	}
	return rev, nil
}

// create records the run, with the revision an apply or teardown
// converges to (else at revision rev), in one write, supersedes the runs that
// stopped at a gate (an apply or teardown decides every gate again) and
// loads the approved change set it goes on by; a drift check notes the
// environment's status before it.
func (s *session) create(ctx context.Context, rev int, now time.Time) error {
	id, kind := s.env.ID(), s.kind
	s.run = store.Run{ID: s.handle.ID, Env: id, Kind: kind, Revision: rev, Status: store.StatusRunning,
		Actor: s.opts.Actor, Reason: s.opts.Reason, Source: s.opts.Source, PID: s.e.PID, StartedAt: now}
	// The run and the revision it converges to are one write.
	rev, err := s.revisions.record(ctx, s.run)
	if err != nil {
		return err
	}
	s.run.Revision = rev
	if kind == KindApply || kind == KindRollback || kind == KindTeardown {
		// This run decides every gate again: the runs that stopped at one
		// end superseded by it.
		if _, err := s.e.Store.SupersedeRuns(ctx, id, s.run.ID); err != nil {
			return err
		}
		if err := s.changes.openChange(ctx); err != nil {
			return fmt.Errorf("read the approved change set: %w", err)
		}
	}
	s.result = &Result{RunID: s.run.ID, Env: id, Kind: kind, Revision: rev}
	if kind == KindDrift {
		before, err := s.e.Store.Environment(ctx, id)
		if err != nil && !errors.Is(err, store.ErrNotFound) {
			return fmt.Errorf("read environment: %w", err)
		}
		s.result.Before = before.Status
	}
	return nil
}
