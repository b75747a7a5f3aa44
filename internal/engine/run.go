package engine

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"sync"
	"time"

	"knit.dev/knit/internal/dag"
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
	opts    Options
	run     store.Run
	release func()
	db      context.Context // for store writes: survives cancellation of the run
	// reconcile: a drift run also brings drifted components back.
	reconcile bool

	mu     sync.Mutex
	states map[string]store.ComponentState
	// planned holds, in a plan run, the outputs each planned component's
	// plan already knows, for the components that take them.
	planned map[string]*runner.Plan
	result  *Result
	confirm sync.Mutex // one interactive question at a time
}

func newRunID(now time.Time) string {
	b := make([]byte, 3)
	_, _ = rand.Read(b)
	return now.UTC().Format("20060102T150405") + "-" + hex.EncodeToString(b)
}

// begin records the revision, takes the lock, marks runs left by a crashed
// knit as interrupted, and creates the run record.
func (e *Engine) begin(ctx context.Context, env *spec.Environment, kind string, opts Options) (*session, error) {
	body, err := json.Marshal(env)
	if err != nil {
		return nil, fmt.Errorf("encode spec: %w", err)
	}
	sum := sha256.Sum256(body)
	now := e.now()
	rev, err := e.Store.PutRevision(ctx, store.Environment{
		ID: env.ID(), Team: env.Spec.TeamName, Name: env.Spec.EnvName, Metadata: env.Metadata.Name,
	}, store.Revision{Env: env.ID(), Hash: hex.EncodeToString(sum[:]), Source: opts.Source, Spec: body, CreatedAt: now})
	if err != nil {
		return nil, fmt.Errorf("record revision: %w", err)
	}
	runID := newRunID(now)
	release, err := e.lock(ctx, env.ID(), runID)
	if err != nil {
		return nil, err
	}
	s := &session{e: e, env: env, opts: opts, release: release, db: context.WithoutCancel(ctx)}
	// Every run holds the lock, and now we do: a run of this environment
	// still recorded as running belongs to a knit that died.
	dead := func(int) bool { return false }
	if _, err := e.Store.InterruptRuns(ctx, env.ID(), dead, now); err != nil {
		release()
		return nil, fmt.Errorf("recover crashed runs: %w", err)
	}
	s.run = store.Run{ID: runID, Env: env.ID(), Kind: kind, Revision: rev.Number, Status: store.StatusRunning,
		Actor: e.Actor, Reason: opts.Reason, PID: e.PID, StartedAt: now}
	if err := e.Store.CreateRun(ctx, s.run); err != nil {
		release()
		return nil, fmt.Errorf("record run: %w", err)
	}
	if s.states, err = e.Store.ComponentStates(ctx, env.ID()); err != nil {
		s.end(ctx, err)
		return nil, err
	}
	s.result = &Result{RunID: runID, Env: env.ID(), Kind: kind, Revision: rev.Number}
	return s, nil
}

// end finishes the run record, sets the environment status, writes the
// audit event and releases the lock. It runs even after cancellation.
func (s *session) end(ctx context.Context, runErr error) {
	defer s.release()
	status := store.StatusSucceeded
	switch {
	case ctx.Err() != nil:
		status = store.StatusInterrupted
	case runErr != nil || (s.result != nil && s.result.Failed()):
		status = store.StatusFailed
	case s.result != nil && s.result.Awaiting():
		status = store.StatusAwaiting
	}
	msg := ""
	if runErr != nil {
		msg = runErr.Error()
	}
	if s.result != nil {
		s.result.Status = status
		s.result.sortByGraph(s.env.Graph())
	}
	_ = s.e.Store.FinishRun(s.db, s.run.ID, status, msg, s.e.now())
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
	cr := &ComponentResult{Name: name, Status: st, StartedAt: s.e.now()}
	s.mu.Lock()
	s.result.Components = append(s.result.Components, cr)
	s.mu.Unlock()
	s.e.emit(Event{Time: cr.StartedAt, RunID: s.run.ID, Component: name, Status: st})
	return cr
}

// set moves a component to a new status and announces it.
func (s *session) set(cr *ComponentResult, st Status, reason string) {
	now := s.e.now()
	s.mu.Lock()
	cr.Status, cr.Reason = st, reason
	if st.IsTerminal() {
		cr.Elapsed = now.Sub(cr.StartedAt)
	}
	s.mu.Unlock()
	s.e.emit(Event{Time: now, RunID: s.run.ID, Component: cr.Name, Status: st, Reason: reason, Elapsed: cr.Elapsed})
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
		done := &store.ComponentRun{RunID: s.run.ID, Env: s.env.ID(), Component: cr.Name, Operation: op,
			Status: string(cr.Status), Reason: cr.Reason, PlanSummary: planJSON, Log: cr.Log,
			StartedAt: cr.StartedAt, FinishedAt: s.e.now()}
		if err := s.e.Store.StartComponentRun(s.db, done); err != nil {
			return fmt.Errorf("record %s: %w", cr.Name, err)
		}
		return nil
	}
	if storeRun == nil {
		storeRun = &store.ComponentRun{RunID: s.run.ID, Env: s.env.ID(), Component: cr.Name, Operation: op, StartedAt: cr.StartedAt}
		if err := s.e.Store.StartComponentRun(s.db, storeRun); err != nil {
			return err
		}
	}
	storeRun.Status, storeRun.Reason, storeRun.PlanSummary = string(cr.Status), cr.Reason, planJSON
	storeRun.Log, storeRun.FinishedAt = cr.Log, s.e.now()
	if state != nil {
		state.Env, state.Component, state.Revision, state.UpdatedAt = s.env.ID(), cr.Name, s.run.Revision, storeRun.FinishedAt
	}
	if err := s.e.Store.FinishComponentRun(s.db, *storeRun, state); err != nil {
		return fmt.Errorf("record %s: %w", cr.Name, err)
	}
	if state != nil {
		s.mu.Lock()
		s.states[cr.Name] = *state
		s.mu.Unlock()
	}
	return nil
}

// started writes a component run in the "running" state before the tool
// starts, so a crash leaves a trail.
func (s *session) started(op string, cr *ComponentResult) (*store.ComponentRun, error) {
	r := &store.ComponentRun{RunID: s.run.ID, Env: s.env.ID(), Component: cr.Name, Operation: op,
		Status: store.StatusRunning, StartedAt: cr.StartedAt}
	if err := s.e.Store.StartComponentRun(s.db, r); err != nil {
		return nil, fmt.Errorf("record %s: %w", cr.Name, err)
	}
	return r, nil
}

// settle records the components the walk never ran (skipped behind a
// failure, waiting behind an approval, interrupted) so the store shows them.
func (s *session) settle(op string, wr *dag.WalkResult, reasonFor func(name string, vr dag.VertexResult) (Status, string)) {
	for name, vr := range wr.Vertices {
		if s.result.Component(name) != nil {
			continue
		}
		st, reason := reasonFor(name, vr)
		cr := s.add(name, st)
		cr.Reason = reason
		_ = s.record(op, cr, nil, nil)
	}
}

// defaultSettle maps the walker's verdict on a component that never ran.
func defaultSettle(_ string, vr dag.VertexResult) (Status, string) {
	switch vr.Status {
	case dag.Waiting:
		return Waiting, vr.Reason
	case dag.Canceled:
		return Canceled, "interrupted before it started"
	default:
		return Skipped, vr.Reason
	}
}

// walkSelected runs fn for every selected component along the graph and
// records the ones the walk never ran (skipped, waiting, interrupted).
func (s *session) walkSelected(ctx context.Context, op string, fn func(context.Context, string) error) error {
	g, err := s.selected()
	if err != nil {
		return err
	}
	s.settle(op, g.Walk(ctx, s.opts.Parallelism, fn), defaultSettle)
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
