package spec

import "fmt"

// What a rollout does when the health checks after an apply fail
// (spec.rollout.onFailure).
const (
	// RollbackOnFailure re-applies the last revision whose verification
	// succeeded (a run of kind rollback).
	RollbackOnFailure = "rollback"
	// PauseOnFailure leaves the environment paused at the failed revision
	// until a person accepts it (knit approve) or rolls it back (knit
	// rollback).
	PauseOnFailure = "pause"
	// NoneOnFailure only fails the run: the default, so rolling back is
	// something an environment opts into.
	NoneOnFailure = "none"
)

// Rollout says what happens when an apply's verification does not
// succeed. An Inconclusive verification always pauses, whatever
// OnFailure says: a person decides.
type Rollout struct {
	// OnFailure is rollback, pause or none ("" means none).
	OnFailure string `json:"onFailure,omitempty"`
	// AutoApprove lets a rollback destroy the components the failed
	// revision added without waiting for approval.
	AutoApprove bool `json:"autoApprove,omitempty"`
	// Strategy is how a change reaches the environment once it is
	// applied (nil: all at once; see strategy.go).
	Strategy *Strategy `json:"strategy,omitempty"`
}

// OnFailure is the environment's rollout policy for a failed
// verification: rollback, pause or none.
func (s *EnvSpec) OnFailure() string {
	if s.Rollout == nil || s.Rollout.OnFailure == "" {
		return NoneOnFailure
	}
	return s.Rollout.OnFailure
}

func (v *validator) rollout() {
	r := v.env.Spec.Rollout
	if r == nil {
		v.marks(nil)
		return
	}
	if v.env.APIVersion != APIVersionKnit {
		v.err("spec.rollout", "", "rollout needs apiVersion: "+APIVersionKnit, "change apiVersion to "+APIVersionKnit)
		return
	}
	switch r.OnFailure {
	case "", RollbackOnFailure, PauseOnFailure, NoneOnFailure:
	default:
		v.err("spec.rollout", "onFailure", fmt.Sprintf("unknown onFailure %q", r.OnFailure), "use rollback, pause or none")
	}
	v.strategy()
}
