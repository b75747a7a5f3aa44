package engine

import (
	"bytes"
	"cmp"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
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
	kind    string
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
	// change is the environment's approved change set, if any, for this
	// run's revision: plans it covers go on without asking (covered).
	change *store.ChangeSet
	// aheadLogs holds what runners logged preparing components ahead of
	// their turn (prepareAhead), until the turn takes it.
	aheadLogs map[string]string
	result    *Result
	// errs are failures of the run's own bookkeeping (store writes), which
	// fail the run whatever its components did.
	errs    []error
	confirm sync.Mutex // one interactive question at a time
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
func (e *Engine) Start(ctx context.Context, kind string, env *spec.Environment, opts Options) (*Run, error) {
	if kind == KindApply && env.Spec.Teardown {
		kind = KindTeardown
	}
	if kind == KindDrift {
		if err := Driftable(env); err != nil {
			return nil, err
		}
	}
	body, ok := bodies[kind]
	if !ok {
		return nil, fmt.Errorf("unknown run kind %q (plan, apply, drift or teardown)", kind)
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
var bodies = map[string]func(*session, context.Context) error{
	KindPlan:     (*session).plan,
	KindApply:    (*session).apply,
	KindDrift:    (*session).drift,
	KindTeardown: (*session).teardown,
}

// begin takes the lock, marks runs left by a crashed knit as interrupted,
// records the revision an apply or teardown converges to, and creates the
// run record. On any failure nothing is left held.
func (e *Engine) begin(ctx context.Context, env *spec.Environment, kind string, opts Options) (_ *session, err error) {
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
	if kind == KindApply || kind == KindTeardown {
		// This run decides every gate again: the runs that stopped at one
		// end superseded by it.
		if _, err := e.Store.SupersedeRuns(ctx, env.ID(), runID); err != nil {
			return nil, err
		}
	}
	if kind == KindApply || kind == KindTeardown {
		if err := s.openChange(ctx); err != nil {
			return nil, fmt.Errorf("read the approved change set: %w", err)
		}
	}
	s.result = &Result{RunID: runID, Env: env.ID(), Kind: kind, Revision: rev}
	s.publish(Event{Kind: RunStarted, Time: now, RunKind: kind})
	return s, nil
}

// revision records the spec an apply or teardown converges to as a new
// revision and makes it the one ENV means. A plan or a drift check records
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
	if s.kind == KindApply || s.kind == KindTeardown {
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
		if err := s.e.Store.SetAppliedRevision(ctx, id, rev.Number); err != nil {
			return 0, fmt.Errorf("record revision %d as applied: %w", rev.Number, err)
		}
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
	if err = s.e.ensureDir(ctx, s.env.Dir); err == nil {
		err = body(s, ctx)
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
	status := s.outcome(ctx, joinErrs(errs))
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
func (s *session) outcome(ctx context.Context, err error) string {
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

// state returns one component's known state (zero if none).
func (s *session) state(name string) store.ComponentState {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.states[name]
}

// producerState is where valueFrom reads a producer's outputs: its stored
// state, except in a plan run where the producer was planned: there an
// output its plan knows takes the planned value, and one its plan changes
// to a value known only after apply is absent (so an environment never
// applied still plans every component it can).
func (s *session) producerState(name string) store.ComponentState {
	st := s.state(name)
	s.mu.Lock()
	plan, ok := s.planned[name]
	s.mu.Unlock()
	if !ok {
		return st
	}
	outs := make(map[string]store.OutputValue, len(st.Outputs))
	for k, v := range st.Outputs {
		outs[k] = v
	}
	for _, k := range plan.OutputChanges {
		delete(outs, k)
	}
	if known, err := encodeOutputs(plan.PlannedOutputs); err == nil {
		for k, v := range known {
			outs[k] = v
		}
	}
	st.Outputs = outs
	return st
}

// snapshot returns a copy of the known component states. Per component,
// use state: copying every state for each of n components costs O(n²).
func (s *session) snapshot() map[string]store.ComponentState {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[string]store.ComponentState, len(s.states))
	for k, v := range s.states {
		out[k] = v
	}
	return out
}

// add registers a component's result entry and announces its first status.
func (s *session) add(name string, st Status) *ComponentResult {
	cr := &ComponentResult{Name: name, Status: st, Code: string(st), StartedAt: s.e.now()}
	s.mu.Lock()
	s.result.Components = append(s.result.Components, cr)
	s.mu.Unlock()
	s.publish(Event{Kind: ComponentStatus, Time: cr.StartedAt, Component: name, Status: st, Code: cr.Code})
	return cr
}

// set moves a component to a new status that says it all (no Cause) and
// announces it; its code is the status itself.
func (s *session) set(cr *ComponentResult, st Status, reason string) {
	s.setCode(cr, st, store.Cause{}, string(st), reason)
}

// setCode moves a component to a new status with its cause for machines,
// and a short code ("waiting: upstream db awaiting approval") and a
// reason for people.
func (s *session) setCode(cr *ComponentResult, st Status, cause store.Cause, code, reason string) {
	now := s.e.now()
	s.mu.Lock()
	cr.Status, cr.Code, cr.Reason, cr.Cause = st, code, reason, cause
	if st.IsTerminal() {
		cr.Elapsed = now.Sub(cr.StartedAt)
	}
	var counts *PlanCounts
	if cr.Plan != nil {
		counts = &PlanCounts{Add: cr.Plan.Add, Change: cr.Plan.Change, Destroy: cr.Plan.Destroy}
	}
	s.mu.Unlock()
	s.publish(Event{Kind: ComponentStatus, Time: now, Component: cr.Name, Status: st, Code: code,
		Reason: reason, Cause: cause, Plan: counts, Elapsed: cr.Elapsed})
}

// record writes a finished component run and, if state is set, the
// component's new state, in one store transaction. A component run never
// started (storeRun nil: up to date, skipped, …) without a new state is
// written finished in one insert.
func (s *session) record(op string, cr *ComponentResult, storeRun *store.ComponentRun, state *store.ComponentState) error {
	var planJSON []byte
	if cr.Plan != nil {
		planJSON, _ = json.Marshal(cr.Plan)
	}
	if storeRun == nil && state == nil {
		done := s.runRecord(op, cr)
		done.Status, done.Code, done.Reason, done.Cause, done.PlanSummary = string(cr.Status), cr.Code, cr.Reason, cr.Cause, planJSON
		done.Log, done.FinishedAt = cr.Log, s.e.now()
		if err := s.e.Store.StartComponentRun(s.db, done); err != nil {
			return s.writeFailed(cr, err)
		}
		return nil
	}
	if storeRun == nil {
		storeRun = s.runRecord(op, cr)
		if err := s.e.Store.StartComponentRun(s.db, storeRun); err != nil {
			return s.writeFailed(cr, err)
		}
	}
	storeRun.Status, storeRun.Code, storeRun.Reason, storeRun.Cause, storeRun.PlanSummary = string(cr.Status), cr.Code, cr.Reason, cr.Cause, planJSON
	storeRun.Log, storeRun.FinishedAt = cr.Log, s.e.now()
	if state != nil {
		state.Env, state.Component, state.UpdatedAt = s.env.ID(), cr.Name, storeRun.FinishedAt
		// The revision whose definition the component was last applied
		// from: only an apply moves it (a removed component is destroyed
		// from its last definition, even after waiting for approval).
		state.Revision = s.state(cr.Name).Revision
		if state.Status == stateApplied || state.Revision == 0 {
			state.Revision = s.run.Revision
		}
		if sameState(s.state(cr.Name), *state) {
			// An in-sync check or an unchanged re-apply: the stored state
			// stays as it is, its time included (it says when it changed).
			state = nil
		}
	}
	if err := s.e.Store.FinishComponentRun(s.db, *storeRun, state); err != nil {
		return s.writeFailed(cr, err)
	}
	if state != nil {
		s.mu.Lock()
		s.states[cr.Name] = *state
		s.mu.Unlock()
	}
	return nil
}

// runRecord is cr's component run in the store, not yet written: running
// (an empty status) until the caller says otherwise.
func (s *session) runRecord(op string, cr *ComponentResult) *store.ComponentRun {
	return &store.ComponentRun{RunID: s.run.ID, Env: s.env.ID(), Component: cr.Name, Operation: op, StartedAt: cr.StartedAt}
}

// started writes a component run in the "running" state before the tool
// starts, so a crash leaves a trail.
func (s *session) started(op string, cr *ComponentResult) (*store.ComponentRun, error) {
	r := s.runRecord(op, cr)
	if err := s.e.Store.StartComponentRun(s.db, r); err != nil {
		return nil, s.writeFailed(cr, err)
	}
	return r, nil
}

// startedAll is started for every check of a drift, in one store write.
func (s *session) startedAll(checks map[string]*check) error {
	runs := make([]*store.ComponentRun, 0, len(checks))
	for _, name := range slices.Sorted(maps.Keys(checks)) {
		c := checks[name]
		c.step.storeRun = s.runRecord(c.step.op, c.step.cr)
		runs = append(runs, c.step.storeRun)
	}
	if err := s.e.Store.StartComponentRun(s.db, runs...); err != nil {
		for _, c := range checks {
			c.step.storeRun = nil
		}
		err = fmt.Errorf("record the drift checks: %w", err)
		s.runFailed(err)
		return err
	}
	return nil
}

// writeFailed handles a component's record that the store refused: the
// component fails (whatever the tool did), and so does the run.
func (s *session) writeFailed(cr *ComponentResult, err error) error {
	err = fmt.Errorf("record %s: %w", cr.Name, err)
	s.runFailed(err)
	if cr.Status != Failed {
		s.setCode(cr, Failed, ReasonRecordFailed.Cause(), string(Failed), err.Error())
	}
	return err
}

// settle records the components the walk never ran (skipped behind a
// failure, waiting behind an approval, interrupted) so the store shows them.
func (s *session) settle(op string, wr *dag.WalkResult, reasonFor func(name string, vr dag.VertexResult) (Status, store.Cause, string, string)) {
	for name, vr := range wr.Vertices {
		if cr := s.result.Component(name); cr != nil {
			s.settleBroken(op, cr, vr)
			continue
		}
		st, cause, code, reason := reasonFor(name, vr)
		cr := s.add(name, st)
		s.setCode(cr, st, cause, code, reason)
		_ = s.record(op, cr, nil, nil)
	}
}

// settleBroken fails a component whose step ended without a final status:
// it panicked (the walker recovered it). The run fails with the message.
func (s *session) settleBroken(op string, cr *ComponentResult, vr dag.VertexResult) {
	s.mu.Lock()
	done := cr.Status.IsTerminal()
	s.mu.Unlock()
	if done || vr.Status != dag.Failed || vr.Err == nil {
		return
	}
	s.runFailed(fmt.Errorf("%s: %w", cr.Name, vr.Err))
	s.setCode(cr, Failed, ReasonRecordFailed.Cause(), "failed: "+firstLine(vr.Err.Error()), vr.Err.Error())
	_ = s.record(op, cr, nil, nil)
}

// defaultSettle says, for machines and people, why a component never ran:
// from the walk's blocking vertex, never from its sentence.
func (s *session) defaultSettle(_ string, vr dag.VertexResult) (Status, store.Cause, string, string) {
	switch vr.Status {
	case dag.Waiting:
		held := vr.Blocker
		if s.kind == KindTeardown {
			// The walk is reversed: what holds a component back is a
			// dependent, whose destroy awaits approval.
			return Waiting, ReasonDependentAwaitingApproval.Cause(held), fmt.Sprintf("waiting: dependent %s awaiting approval", held),
				fmt.Sprintf("waiting: dependent %s awaiting approval by an operator", held)
		}
		return Waiting, ReasonUpstreamAwaitingApproval.Cause(held), fmt.Sprintf("waiting: upstream %s awaiting approval", held),
			fmt.Sprintf("waiting: %s awaiting approval by an operator", held)
	case dag.Canceled:
		return Canceled, ReasonInterrupted.Cause(), "interrupted: before it started", "interrupted before it started"
	default:
		failed := vr.Blocker
		if failed == "" { // a cycle: the walk ran nothing
			return Skipped, ReasonDependencyCycle.Cause(), "skipped: " + vr.Reason, "skipped: " + vr.Reason
		}
		return Skipped, ReasonUpstreamFailed.Cause(failed), fmt.Sprintf("skipped: upstream %s failed", failed), fmt.Sprintf("skipped: %s failed", failed)
	}
}

// walkSelected runs fn for every selected component along the graph,
// preparing new ones ahead (prepareAhead), and records the ones the walk
// never ran (skipped, waiting, interrupted).
func (s *session) walkSelected(ctx context.Context, op string, fn func(context.Context, string) error) error {
	g, err := s.selected()
	if err != nil {
		return err
	}
	s.settle(op, g.WalkAhead(ctx, s.opts.Parallelism, s.prepareAhead, fn), s.defaultSettle)
	return nil
}

// selected returns the environment's graph limited to opts.Components and
// what they depend on, then to the components selectiveReconcile picks;
// unknown names are an error.
func (s *session) selected() (*dag.Graph, error) {
	g := s.env.Graph()
	for _, c := range s.opts.Components {
		if !g.Has(c) {
			return nil, fmt.Errorf("no component %q in %s", c, s.env.ID())
		}
	}
	if len(s.opts.Components) > 0 {
		g = g.WithDependencies(s.opts.Components)
	}
	sr := s.env.Spec.SelectiveReconcile
	if sr == nil || sr.TagName == "" {
		return g, nil
	}
	var keep []string
	for _, name := range g.Vertices() {
		// skipMode leaves the tagged components alone; otherwise only they run.
		if s.env.Component(name).HasTag(sr.TagName, sr.TagValues) != sr.SkipMode {
			keep = append(keep, name)
		}
	}
	return g.Subgraph(keep), nil
}

// canceled reports whether err came from the run being interrupted: once
// the run's context is done, a failing tool was most likely stopped by it.
func canceled(ctx context.Context, err error) bool {
	return err != nil && ctx.Err() != nil
}

// sameState reports whether next would store nothing new over prev but
// its time.
func sameState(prev, next store.ComponentState) bool {
	if prev.Component == "" || prev.Status != next.Status || prev.Fingerprint != next.Fingerprint ||
		prev.Revision != next.Revision || len(prev.Outputs) != len(next.Outputs) {
		return false
	}
	for name, o := range next.Outputs {
		p, ok := prev.Outputs[name]
		if !ok || p.Sensitive != o.Sensitive || !bytes.Equal(p.Value, o.Value) {
			return false
		}
	}
	return true
}
