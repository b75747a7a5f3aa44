package engine

import (
	"encoding/json"
	"fmt"

	"knit.dev/knit/internal/spec"
	"knit.dev/knit/internal/store"
)

// recordOutcome records the run's end with status and err, its audit
// event and the environment's new status, in one store write. A plan is
// not audited and leaves the status alone: it changes nothing.
func (s *session) recordOutcome(status store.RunStatus, err error) error {
	o := store.RunOutcome{RunID: s.run.ID, Status: status, At: s.e.now(), ReleaseLock: true}
	if s.result.Policy != nil {
		if b, err := json.Marshal(s.result.Policy); err == nil {
			o.Policy = b
		}
	}
	if err != nil {
		o.Error = err.Error()
	}
	action := string(s.kind)
	switch {
	case s.kind == KindDrift && s.reconciles():
		action = "reconcile"
	case s.kind == KindDrift:
		action = "drift-check"
	}
	if s.kind != KindPlan {
		detail := string(status)
		if s.result.Error != "" {
			detail = s.result.Error
		}
		o.Audit = &store.AuditEvent{
			Env: s.env.ID(), Actor: s.opts.Actor, Action: action, Revision: s.run.Revision,
			RunID: s.run.ID, Reason: s.opts.Reason, Detail: detail, Time: o.At,
		}
		o.EnvStatus = envStatuses[status]
		o.Verification = s.verification.verdict(status, err)
		switch {
		case s.result.Rollout == RolloutPaused:
			o.EnvStatus = EnvPaused
		case s.kind == KindTeardown && status == store.StatusSucceeded:
			o.EnvStatus = EnvTornDown
		case s.kind == KindDrift && status == store.StatusSucceeded && s.result.driftLeft():
			// Drift found and not brought back (a check, a policy: alert,
			// a denied fix) stays the environment's status.
			o.EnvStatus = EnvDrifted
		}
	}
	if err := s.e.Store.RecordOutcome(s.db, o); err != nil {
		return fmt.Errorf("record the outcome of run %s (%s): %w", s.run.ID, action, err)
	}
	return nil
}

// reconciles reports whether the drift run may bring a component back:
// it reconciles, and some component it checks is not policy: alert (a
// run of alert-only components is a drift check, whoever started it).
func (s *session) reconciles() bool {
	if !s.opts.Reconcile {
		return false
	}
	for _, c := range s.result.Components {
		if s.opts.Policies[c.Name] != spec.DriftAlert {
			return true
		}
	}
	return len(s.result.Components) == 0
}

// driftLeft reports whether a component of the run is still drifted (or
// affected by upstream drift) at its end: found, and not brought back.
func (r *Result) driftLeft() bool {
	for _, c := range r.Components {
		if c.Status == Drifted || c.Status == Affected {
			return true
		}
	}
	return false
}

// envStatuses maps a run's outcome to the environment's status.
var envStatuses = map[store.RunStatus]store.EnvStatus{
	store.StatusSucceeded: EnvApplied, store.StatusFailed: EnvFailed,
	store.StatusAwaiting: EnvAwaiting, store.StatusInterrupted: EnvInterrupted,
	store.StatusWaiting: store.EnvWaiting,
}
