package knit

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"knit.dev/knit/internal/spec"
	"knit.dev/knit/internal/store"
)

// Rollout states (store.Rollout.State).
const (
	RolloutRunning   = "running"   // a step runs, or the next one is due
	RolloutPaused    = "paused"    // a pause without duration: knit rollout promote goes on
	RolloutAborting  = "aborting"  // weight to 0, canary destroyed, back to the stable revision
	RolloutSucceeded = "succeeded" // the stable instances run the new revision
	RolloutAborted   = "aborted"   // the environment stayed on the stable revision
	RolloutFailed    = "failed"    // a run of the rollout failed: a person decides (knit rollout retry)
)

// Phases of a rollout's runs (RolloutStep.Phase).
const (
	PhaseUp       = "up"       // the canary instances come up at weight 0
	PhaseStep     = "step"     // a setWeight or analysis step
	PhaseHandover = "handover" // a canary ending below 100: it takes all traffic before the stable instances are replaced
	PhasePromote  = "promote"  // the stable instances take the new revision, weight 0
	PhaseFinish   = "finish"   // the new revision as the file says: the canary destroyed
	PhaseAbort    = "abort"    // weight 0 with the canary still up
	PhaseAborted  = "aborted"  // the stable revision as it was: the canary destroyed
	auditRollout  = "rollout-step"
	auditStart    = "rollout-start"
	auditAbort    = "rollout-aborted"
	auditPromoted = "rollout-promoted"
)

// RolloutStep marks a run as a step of rollout ID: its phase and the
// index of the strategy's step it carries out.
type RolloutStep struct {
	ID    string `json:"id"`
	Phase string `json:"phase"`
	Step  int    `json:"step"`
}

// rolloutDetail is what a rollout's record keeps for the library
// (store.Rollout.Detail): where the new revision comes from, its spec,
// the stable revision, and what each step found.
type rolloutDetail struct {
	Stable int             `json:"stable"`
	Next   json.RawMessage `json:"next"`
	Origin string          `json:"origin,omitempty"`
	Root   string          `json:"root,omitempty"`
	Commit string          `json:"commit,omitempty"`
	Author string          `json:"author,omitempty"`
	// Message is the commit's message.
	Message string `json:"message,omitempty"`
	Tree    string `json:"tree,omitempty"`
	Actor   string `json:"actor,omitempty"`
	// AutoApprove is the asking run's: each step's run has it.
	AutoApprove bool `json:"autoApprove,omitempty"`
	// Current is the run the rollout is at: a resumed or approved apply
	// of the environment carries it on.
	Current *RolloutStep `json:"current,omitempty"`
	// PauseUntil is when a pause with a duration ends.
	PauseUntil time.Time `json:"pauseUntil,omitzero"`
	// Evidence is what each step's run found, oldest first.
	Evidence []StepEvidence `json:"evidence,omitempty"`
	// Reason says why the rollout aborted or failed.
	Reason string `json:"reason,omitempty"`
}

// rollout is one rollout as the library works with it.
type rollout struct {
	rec    store.Rollout
	detail rolloutDetail
}

func (a *Rollouts) read(ctx context.Context, env string) (*rollout, error) {
	rec, err := a.k.store.Rollout(ctx, env)
	if err != nil {
		return nil, err
	}
	r := &rollout{rec: rec}
	if err := json.Unmarshal([]byte(rec.Detail), &r.detail); err != nil {
		return nil, fmt.Errorf("the rollout of %s is unreadable: %w", env, err)
	}
	return r, nil
}

// activeRollout is env's rollout that is not over, nil when none is.
func (a *Rollouts) active(ctx context.Context, env string) (*rollout, error) {
	r, err := a.read(ctx, env)
	if errors.Is(err, store.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	switch r.rec.State {
	case RolloutRunning, RolloutPaused, RolloutAborting:
		return r, nil
	}
	return nil, nil
}

// save writes r compare-and-set, with audit (nil: none); its version
// moves on.
func (a *Rollouts) save(ctx context.Context, r *rollout, audit *store.AuditEvent) error {
	body, err := json.Marshal(r.detail)
	if err != nil {
		return err
	}
	r.rec.Detail, r.rec.UpdatedAt = string(body), a.k.now()
	if audit != nil {
		audit.Env, audit.Time = r.rec.Env, a.k.now()
		if audit.Actor == "" {
			audit.Actor = r.detail.Actor
		}
	}
	if err := a.k.store.PutRollout(ctx, r.rec, audit); err != nil {
		return err
	}
	r.rec.Version++
	a.k.rolloutNotify.tell(audit)
	return nil
}

// specs are the rollout's stable and next environments.
func (a *Rollouts) specs(ctx context.Context, r *rollout) (stable, next *spec.Environment, err error) {
	rev, err := a.k.store.Revision(ctx, r.rec.Env, r.detail.Stable)
	if err != nil {
		return nil, nil, fmt.Errorf("the stable revision %d of %s: %w", r.detail.Stable, r.rec.Env, err)
	}
	if stable, err = spec.FromJSON(rev.Spec, rev.Source, rev.Root); err != nil {
		return nil, nil, err
	}
	if next, err = spec.FromJSON(r.detail.Next, r.detail.Origin, r.detail.Root); err != nil {
		return nil, nil, err
	}
	return stable, next, nil
}
