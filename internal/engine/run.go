package engine

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"sync"
	"time"

	"knit.dev/knit/internal/dag"
	"knit.dev/knit/internal/spec"
	"knit.dev/knit/internal/store"
)

// session is one run in progress, the engine's core: the run's record,
// lock and events, the components' known states (updated as components
// finish, so dependents see fresh outputs) and results, and the walk of
// the environment's graph. What a run decides along the way is its
// collaborators' job: the gate (what waits for a person), the approval
// records, judging (the policies), change sets and the verification
// after an apply; each run kind's walk is its own walker (bodies).
type session struct {
	e      *Engine
	env    *spec.Environment
	kind   store.RunKind
	opts   Options
	run    store.Run
	handle *Run
	lock   *envLock
	db     context.Context // for store writes: survives cancellation of the run

	mu     sync.Mutex
	states map[string]store.ComponentState
	result *Result
	// errs are failures of the run's own bookkeeping (store writes), which
	// fail the run whatever its components did.
	errs []error
	// graph is the environment's, built once when first asked (hasDependents).
	graph *dag.Graph
	// aheadLogs holds what runners logged preparing components ahead of
	// their turn (prepareAhead), until the turn takes it.
	aheadLogs map[string]string

	// The run's collaborators, each with one job.
	removed      *removals
	revisions    *revisions
	planned      *planned
	previews     *previews
	approvals    *approvals
	gate         *gate
	judging      *judging
	changes      *changes
	verification *verification
	// upstream reads the outputs of other environments this one reads;
	// exportsBefore are the exported outputs' values when the run began.
	upstream      *envReader
	exportsBefore map[string][]byte
}

// wire makes the run's collaborators.
func (s *session) wire() {
	s.removed = &removals{s: s}
	s.revisions = &revisions{s: s}
	s.planned = &planned{}
	s.previews = &previews{s: s}
	s.approvals = &approvals{s: s, open: map[string]bool{}, holds: map[string]heldPlan{}}
	s.gate = &gate{s: s, approvals: s.approvals}
	s.judging = &judging{s: s, gate: s.gate, approvals: s.approvals, planned: s.planned}
	s.changes = &changes{s: s, gate: s.gate, approvals: s.approvals, planned: s.planned}
	s.verification = &verification{s: s}
	s.upstream = newEnvReader(s.db, s.e.Store, s.env)
}

// NewRunID returns a new run ID: sortable by time, unique by its random tail.
func NewRunID(now time.Time) string {
	b := make([]byte, 3)
	_, _ = rand.Read(b)
	return now.UTC().Format("20060102T150405") + "-" + hex.EncodeToString(b)
}

// Start begins a run of kind on env and returns its handle as soon as the
// run holds the environment's lock and is recorded; the work goes on in
// the background. A lock held by another run fails at once (ErrLocked) and
// records only the refusal. Cancelling ctx interrupts the run.
func (e *Engine) Start(ctx context.Context, kind store.RunKind, env *spec.Environment, opts Options) (*Run, error) {
	if kind == KindApply && env.Spec.Teardown {
		kind = KindTeardown
	}
	if kind == KindDrift {
		if err := Driftable(env); err != nil {
			return nil, err
		}
	}
	if opts.Preview && kind != KindPlan {
		return nil, fmt.Errorf("a preview is a plan, not a %s run", kind)
	}
	body, ok := bodies[kind]
	if !ok {
		return nil, fmt.Errorf("unknown run kind %q (plan, apply, drift, teardown or rollback)", kind)
	}
	if opts.Parallelism <= 0 {
		opts.Parallelism = 4
	}
	s, err := e.begin(ctx, env, kind, opts)
	if err != nil {
		return nil, err
	}
	e.register(s.handle)
	var observed <-chan struct{}
	if opts.OnEvent != nil {
		observed = s.handle.observe(opts.OnEvent)
	}
	go s.execute(body, observed)
	return s.handle, nil
}

// bodies are what each kind of run does once it has begun.
var bodies = map[store.RunKind]func(*session, context.Context) error{
	KindPlan:     func(s *session, ctx context.Context) error { return newPlanner(s).plan(ctx) },
	KindApply:    func(s *session, ctx context.Context) error { return newApplier(s).apply(ctx) },
	KindDrift:    func(s *session, ctx context.Context) error { return newDrifter(s).drift(ctx) },
	KindTeardown: func(s *session, ctx context.Context) error { return newTeardown(s).teardown(ctx) },
	KindRollback: func(s *session, ctx context.Context) error { return newApplier(s).apply(ctx) },
}

// applies reports whether the run converges the environment to its spec:
// an apply, or a rollback (an apply of an earlier revision).
func (s *session) applies() bool { return s.kind == KindApply || s.kind == KindRollback }

// execute runs the body and then, whatever happened (a panic included),
// finishes the run: its record, audit event, environment status and lock.
func (s *session) execute(body func(*session, context.Context) error, observed <-chan struct{}) {
	ctx := s.handle.ctx
	var err error
	defer func() {
		if p := recover(); p != nil {
			err = recovered("run "+s.run.ID, p)
		}
		s.finish(ctx, err, observed)
	}()
	if err = s.e.ensureDir(ctx, s.env.Dir); err != nil {
		return
	}
	if c, ok := s.opts.Judge.(Checker); ok {
		if cerr := c.Check(); cerr != nil {
			err = &PolicyError{Err: cerr}
			return
		}
	}
	if s.opts.Judge != nil && (s.applies() || s.kind == KindTeardown) {
		if err = s.judging.judgeFirst(ctx); err != nil {
			return
		}
	}
	if err = s.revisions.markApplied(); err != nil {
		return
	}
	err = body(s, ctx)
	if err == nil {
		err = s.verification.verify(ctx)
	}
}

// finish records the run's outcome, audits it, sets the environment's
// status, releases the lock and tells subscribers. Every store failure is
// reported in the run's error; none is ignored.
func (s *session) finish(ctx context.Context, runErr error, observed <-chan struct{}) {
	if runErr == nil {
		runErr = runFailure(ctx)
	}
	s.mu.Lock()
	errs := append([]error{runErr}, s.errs...)
	s.mu.Unlock()
	errs = append(errs, s.previews.removePreviewDirs())
	if s.kind == KindApply || s.kind == KindTeardown || s.opts.Preview {
		s.result.Checksum = PlanChecksum(s.result.Components)
	}
	status := s.outcome(ctx, joinErrs(errs))
	if status == store.StatusSucceeded {
		if err := s.previews.linkPreview(); err != nil {
			errs = append(errs, err)
			status = s.outcome(ctx, joinErrs(errs))
		}
	}
	s.result.Rollout = s.verification.rollout(joinErrs(errs))
	s.exportsChanged()
	s.result.SortByGraph(s.env.Graph())
	// The run's record, audit event, environment status and the release
	// of its lock are one write: they commit together or not at all (no
	// renewal of the lock may run meanwhile). If that write fails, the run
	// is recorded failed (with why), unless the store refused it for a
	// lost lock, which it would refuse again; the lock is then released
	// on its own.
	s.lock.stop()
	released := true
	if err := s.recordOutcome(status, joinErrs(errs)); err != nil {
		errs = append(errs, err)
		released = false
		if !errors.Is(err, store.ErrLockLost) {
			rerr := s.recordOutcome(store.StatusFailed, joinErrs(errs))
			errs, released = append(errs, rerr), rerr == nil
		}
		status = store.StatusFailed
	}
	errs = append(errs, s.lock.release(released))
	err := joinErrs(errs)
	s.result.Status = status
	if err != nil {
		s.result.Error = err.Error()
	}
	s.publish(Event{Kind: RunFinished, Time: s.e.now(), RunKind: s.kind, RunStatus: status, Error: s.result.Error})
	if observed != nil {
		<-observed
	}
	s.handle.result, s.handle.err = s.result, err
	s.handle.cancel(context.Canceled) // free the context's resources
	s.e.finished(s.run.ID)
	close(s.handle.done)
}

// outcome is the run's status from its components and error.
func (s *session) outcome(ctx context.Context, err error) store.RunStatus {
	switch {
	case err != nil:
		return store.StatusFailed
	case ctx.Err() != nil:
		return store.StatusInterrupted
	case s.result.Failed():
		return store.StatusFailed
	case s.result.Awaiting():
		return store.StatusAwaiting
	case s.result.WaitingUpstream():
		return store.StatusWaiting
	}
	return store.StatusSucceeded
}

// runFailed records a failure of the run as a whole (a store write that
// failed, a panic): the run fails, whatever its components did.
func (s *session) runFailed(err error) {
	if err == nil {
		return
	}
	s.mu.Lock()
	s.errs = append(s.errs, err)
	s.mu.Unlock()
}

// publish stamps ev with the run's identity and appends it to the run's events.
func (s *session) publish(ev Event) {
	ev.Env, ev.RunID = s.env.ID(), s.handle.ID
	if ev.Time.IsZero() {
		ev.Time = s.e.now()
	}
	s.handle.log.publish(ev)
}

// canceled reports whether err came from the run being interrupted: once
// the run's context is done, a failing tool was most likely stopped by it.
func canceled(ctx context.Context, err error) bool {
	return err != nil && ctx.Err() != nil
}
