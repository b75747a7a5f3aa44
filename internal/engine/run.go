package engine

import (
	"cmp"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"knit.dev/knit/internal/dag"
	"knit.dev/knit/internal/procexec"
	"knit.dev/knit/internal/runner"
	"knit.dev/knit/internal/spec"
	"knit.dev/knit/internal/store"
)

// session is one run in progress: its record, lock, the components' known
// states (updated as components finish, so dependents see fresh outputs)
// and the results so far.
type session struct {
	e       *Engine
	env     *spec.Environment
	kind    store.RunKind
	opts    Options
	run     store.Run
	handle  *Run
	release func() error
	db      context.Context // for store writes: survives cancellation of the run
	// removed are components the environment applied that are no longer in
	// its file, each with the environment its last definition came from.
	removed map[string]*spec.Environment

	mu     sync.Mutex
	states map[string]store.ComponentState
	// planned holds, in a plan run, the outputs each planned component's
	// plan already knows, for the components that take them.
	planned map[string]*runner.Plan
	// open names the components with an open (pending or approved)
	// approval: those at the start, and those this run asks for. Only
	// runs, which hold the lock, open approvals, so for any other
	// component the store need not be asked.
	open map[string]bool
	// graph is the environment's, built once when first asked (hasDependents).
	graph *dag.Graph
	// holds are the approvals components wait with in this run, by name.
	holds map[string]heldPlan
	// destroyByPlan: a teardown destroys every component by a destroy
	// plan, as a preview of it planned (destroyPreviewed).
	destroyByPlan bool
	// change is the environment's approved change set, if any, for this
	// run's revision: plans it covers go on without asking (covered).
	change *store.ChangeSet
	// aheadLogs holds what runners logged preparing components ahead of
	// their turn (prepareAhead), until the turn takes it.
	aheadLogs map[string]string
	result    *Result
	// checkFailures are the tool's own checks (OpenTofu check blocks)
	// that failed in this run's applies, by component: verify reports them.
	checkFailures map[string][]runner.CheckFailure
	// errs are failures of the run's own bookkeeping (store writes), which
	// fail the run whatever its components did.
	errs    []error
	confirm sync.Mutex // one interactive question at a time
	// mustApprove names the components a policy requires a person to
	// approve (require_approval), with the decision's text.
	mustApprove map[string]string
	// judged is the plan judgeFirst judged; usable holds, by component,
	// the saved plans it judged that may apply as they are (judgedPlan):
	// any other plan a component's turn makes is judged again
	// (judgeAgain); denied, once such a judgement denies, stops the rest.
	// convergesTo is the revision an apply or teardown converges to, made
	// the applied one once the policies let the run go on (markApplied).
	convergesTo int
	judged      []PlannedComponent
	usable      map[string]judgedPlan
	denied      *PolicyDeniedError
	// secrets are, in a judged plan run, the secrets each planned
	// component was given, which the Judge masks in its input.
	secrets map[string][]string
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
	KindPlan:     (*session).plan,
	KindApply:    (*session).apply,
	KindDrift:    (*session).drift,
	KindTeardown: (*session).teardown,
	KindRollback: (*session).apply,
}

// applies reports whether the run converges the environment to its spec:
// an apply, or a rollback (an apply of an earlier revision).
func (s *session) applies() bool { return s.kind == KindApply || s.kind == KindRollback }

// begin takes the lock, marks runs left by a crashed knit as interrupted,
// records the revision an apply or teardown converges to, and creates the
// run record. On any failure nothing is left held.
func (e *Engine) begin(ctx context.Context, env *spec.Environment, kind store.RunKind, opts Options) (_ *session, err error) {
	now := e.now()
	runID := opts.RunID
	if runID == "" {
		runID = NewRunID(now)
	}
	runCtx, cancel := context.WithCancelCause(ctx)
	if kind == KindTeardown {
		env = tornDown(env, opts.Components)
	}
	s := &session{e: e, env: env, kind: kind, opts: opts, db: context.WithoutCancel(ctx)}
	s.handle = &Run{ID: runID, Env: env.ID(), Kind: kind, log: newEventLog(e.EventRetention), cancel: cancel, done: make(chan struct{})}
	// Every tool the run starts is recorded while it runs (toolTracker).
	s.handle.ctx = procexec.WithTracker(runCtx, toolTracker{e: e, db: s.db, run: runID, env: env.ID()})
	release, err := e.lock(ctx, env.ID(), runID, opts.Actor, func(why error) { cancel(why) })
	if err != nil {
		cancel(err)
		if errors.Is(err, ErrLocked) {
			// The refusal is all a refused run records.
			if aerr := e.Store.AppendAudit(s.db, store.AuditEvent{Env: env.ID(), Actor: opts.Actor, Action: "refused",
				Reason: opts.Reason, Detail: err.Error(), Time: now}); aerr != nil {
				err = joinErrs([]error{err, fmt.Errorf("record the refusal: %w", aerr)})
			}
		}
		return nil, err
	}
	s.release = release
	defer func() {
		if err != nil {
			cancel(err)
			err = joinErrs([]error{err, release()})
		}
	}()
	// Every run holds the lock, and now we do: a run of this environment
	// still recorded as running belongs to a knit that died, and so does
	// any tool still recorded. Those tools are ended before anything runs.
	if err := e.EndLeftTools(ctx, env.ID(), func(string) (bool, error) { return true, nil }); err != nil {
		return nil, fmt.Errorf("end the tools a crashed knit left running: %w", err)
	}
	dead := func(int) bool { return false }
	if _, err := e.Store.InterruptRuns(ctx, env.ID(), dead, now); err != nil {
		return nil, fmt.Errorf("recover crashed runs: %w", err)
	}
	rev, err := s.revision(ctx, now)
	if err != nil {
		return nil, err
	}
	if s.states, err = e.Store.ComponentStates(ctx, env.ID()); err != nil {
		return nil, fmt.Errorf("read component states: %w", err)
	}
	open, err := e.Store.ListApprovals(ctx, store.ApprovalFilter{Env: env.ID(), Statuses: []string{store.ApprovalPending, store.ApprovalApproved}})
	if err != nil {
		return nil, fmt.Errorf("read open approvals: %w", err)
	}
	s.open, s.holds = make(map[string]bool, len(open)), map[string]heldPlan{}
	for _, a := range open {
		s.open[a.Component] = true
	}
	if kind != KindDrift {
		if err := s.addRemoved(ctx); err != nil {
			return nil, err
		}
	}
	s.run = store.Run{ID: runID, Env: env.ID(), Kind: kind, Revision: rev, Status: store.StatusRunning,
		Actor: opts.Actor, Reason: opts.Reason, Source: opts.Source, PID: e.PID, StartedAt: now}
	if err := e.Store.CreateRun(ctx, s.run); err != nil {
		return nil, fmt.Errorf("record run: %w", err)
	}
	if kind == KindApply || kind == KindRollback || kind == KindTeardown {
		// This run decides every gate again: the runs that stopped at one
		// end superseded by it.
		if _, err := e.Store.SupersedeRuns(ctx, env.ID(), runID); err != nil {
			return nil, err
		}
	}
	if kind == KindApply || kind == KindRollback || kind == KindTeardown {
		if err := s.openChange(ctx); err != nil {
			return nil, fmt.Errorf("read the approved change set: %w", err)
		}
	}
	s.result = &Result{RunID: runID, Env: env.ID(), Kind: kind, Revision: rev}
	if kind == KindDrift {
		before, err := e.Store.Environment(ctx, env.ID())
		if err != nil && !errors.Is(err, store.ErrNotFound) {
			return nil, fmt.Errorf("read environment: %w", err)
		}
		s.result.Before = before.Status
	}
	s.publish(Event{Kind: RunStarted, Time: now, RunKind: kind})
	return s, nil
}

// revision records the spec an apply or teardown converges to as a new
// revision, which markApplied makes the one ENV means once the policies
// let the run go on. A plan or a drift check records
// none: a plan of an edited file must not move what was applied. Their run
// names the applied revision when the spec is the applied one (0 otherwise).
func (s *session) revision(ctx context.Context, now time.Time) (int, error) {
	body, err := json.Marshal(s.env)
	if err != nil {
		return 0, fmt.Errorf("encode spec: %w", err)
	}
	// The folder relative paths resolve from is part of what was applied:
	// a commit that changes only a module the spec reads is a new revision
	// (its tree is another folder). A spec read back from a revision has
	// that revision's folder, so it hashes the same.
	h := sha256.New()
	h.Write(body)
	if s.env.Dir != "" {
		h.Write([]byte("\x00dir=" + s.env.Dir))
	}
	hash := hex.EncodeToString(h.Sum(nil))
	id := s.env.ID()
	if s.applies() || s.kind == KindTeardown {
		root, err := s.root(ctx)
		if err != nil {
			return 0, err
		}
		rev, err := s.e.Store.PutRevision(ctx, store.Environment{
			ID: id, Team: s.env.Spec.TeamName, Name: s.env.Spec.EnvName, Metadata: s.env.Metadata.Name,
		}, store.Revision{Env: id, Hash: hash, Source: s.origin(), Spec: body, CreatedAt: now,
			Root: cmp.Or(root, s.env.Dir), Commit: s.opts.Commit, Author: s.opts.Author, Message: s.opts.Message, File: s.env.Text})
		if err != nil {
			return 0, fmt.Errorf("record revision: %w", err)
		}
		// It becomes the one ENV means once the policies let the run go
		// on (markApplied): a denied run changes nothing, ENV included.
		s.convergesTo = rev.Number
		return rev.Number, nil
	}
	e, err := s.e.Store.Environment(ctx, id)
	if errors.Is(err, store.ErrNotFound) || (err == nil && e.AppliedRevision == 0) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("read environment: %w", err)
	}
	applied, err := s.e.Store.Revision(ctx, id, e.AppliedRevision)
	if err != nil {
		return 0, fmt.Errorf("read applied revision: %w", err)
	}
	if applied.Hash == hash || s.kind == KindDrift {
		return applied.Number, nil
	}
	return 0, nil
}

// markApplied makes the revision an apply or teardown converges to the
// one ENV means, as the run begins to change things.
func (s *session) markApplied() error {
	if s.convergesTo == 0 {
		return nil
	}
	if err := s.e.Store.SetAppliedRevision(s.db, s.env.ID(), s.convergesTo); err != nil {
		return fmt.Errorf("record revision %d as applied: %w", s.convergesTo, err)
	}
	return nil
}

// root is the folder the revision's relative paths resolve against:
// opts.Root, or, for a teardown of the applied spec (ENV, whose revision
// it records with teardown marked), the root of the revision it came from,
// which a revision of a git commit needs to find its files again.
func (s *session) root(ctx context.Context) (string, error) {
	if s.opts.Root != "" || s.kind != KindTeardown {
		return s.opts.Root, nil
	}
	e, err := s.e.Store.Environment(ctx, s.env.ID())
	if errors.Is(err, store.ErrNotFound) || (err == nil && e.AppliedRevision == 0) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("read environment: %w", err)
	}
	applied, err := s.e.Store.Revision(ctx, s.env.ID(), e.AppliedRevision)
	if err != nil {
		return "", fmt.Errorf("read applied revision: %w", err)
	}
	if applied.Source != s.origin() {
		return "", nil
	}
	return applied.Root, nil
}

// origin is where the spec came from, absolute so that the revision can be
// loaded again from any folder.
func (s *session) origin() string {
	if s.opts.Origin != "" {
		return s.opts.Origin
	}
	if s.env.File == "" || strings.Contains(s.env.File, "://") {
		return s.env.File // none, or a spec read from a git commit (URL@commit:path)
	}
	if abs, err := filepath.Abs(s.env.File); err == nil {
		return abs
	}
	return s.env.File
}

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
		if err = s.judgeFirst(ctx); err != nil {
			return
		}
	}
	if err = s.markApplied(); err != nil {
		return
	}
	err = body(s, ctx)
	if err == nil {
		err = s.verify(ctx)
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
	errs = append(errs, s.removePreviewDirs())
	if s.kind == KindApply || s.kind == KindTeardown || s.opts.Preview {
		s.result.Checksum = PlanChecksum(s.result.Components)
	}
	status := s.outcome(ctx, joinErrs(errs))
	if status == store.StatusSucceeded {
		if err := s.linkPreview(); err != nil {
			errs = append(errs, err)
			status = s.outcome(ctx, joinErrs(errs))
		}
	}
	s.result.Rollout = s.rollout(joinErrs(errs))
	s.result.SortByGraph(s.env.Graph())
	// The run's record, audit event and environment status are one write:
	// they commit together or not at all. If that write fails, the run is
	// recorded failed (with why), unless the store refused it for a lost
	// lock, which it would refuse again.
	if err := s.recordOutcome(status, joinErrs(errs)); err != nil {
		errs = append(errs, err)
		if !errors.Is(err, store.ErrLockLost) {
			errs = append(errs, s.recordOutcome(store.StatusFailed, joinErrs(errs)))
		}
		status = store.StatusFailed
	}
	errs = append(errs, s.release())
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
