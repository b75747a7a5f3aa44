package engine

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"slices"

	"knit.dev/knit/internal/store"
)

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
	plan, ok := s.planned.get(name)
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
func (dr *drifter) startedAll(checks map[string]*check) error {
	runs := make([]*store.ComponentRun, 0, len(checks))
	for _, name := range slices.Sorted(maps.Keys(checks)) {
		c := checks[name]
		c.step.storeRun = dr.s.runRecord(c.step.op, c.step.cr)
		runs = append(runs, c.step.storeRun)
	}
	if err := dr.s.e.Store.StartComponentRun(dr.s.db, runs...); err != nil {
		for _, c := range checks {
			c.step.storeRun = nil
		}
		err = fmt.Errorf("record the drift checks: %w", err)
		dr.s.runFailed(err)
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
