package store

import (
	"context"
	"time"
)

// Rollout is where an environment's rollout by its strategy
// (spec.rollout.strategy) stands: the step it is at, the weight the router
// was last given, and what the library keeps to carry it on (Detail, its
// own JSON: the new revision's spec, each step's evidence). An
// environment keeps its newest rollout; Version orders writes:
// PutRollout takes the one read.
type Rollout struct {
	Env     string `json:"env"`
	ID      string `json:"id"`
	Version int64  `json:"version"`
	// State is running, paused, promoting, aborting, succeeded or aborted.
	State string `json:"state"`
	// Step is the index of the step the rollout is at (len(steps): the
	// end); Weight the share the router was last set to.
	Step   int `json:"step"`
	Weight int `json:"weight"`
	// RunID is the run that carries the current step out ("": none).
	RunID     string    `json:"runId,omitempty"`
	Detail    string    `json:"detail"`
	UpdatedAt time.Time `json:"updatedAt"`
}

// Rollouts keeps each environment's newest rollout.
type Rollouts interface {
	// Rollout is env's newest rollout, ErrNotFound when it has none.
	Rollout(ctx context.Context, env string) (Rollout, error)
	// Rollouts lists every environment's newest rollout, by environment.
	Rollouts(ctx context.Context) ([]Rollout, error)
	// PutRollout records r provided env's rollout is still at r.Version
	// (0: none recorded yet; a new rollout replaces a finished one from
	// that one's version), else ErrConflict; it stores r.Version+1 and appends audit, when non-nil,
	// in one transaction.
	PutRollout(ctx context.Context, r Rollout, audit *AuditEvent) error
}
