package store

import (
	"context"
	"time"

	"knit.dev/knit/internal/words"
)

// Approval statuses (words.ApprovalStatus). A pending approval waits for
// a person; approved is decided but not yet applied; applied, rejected
// and stale are final.
const (
	ApprovalPending  = string(words.ApprovalPending)
	ApprovalApproved = string(words.ApprovalApproved)
	ApprovalRejected = string(words.ApprovalRejected)
	ApprovalApplied  = string(words.ApprovalApplied)
	ApprovalStale    = string(words.ApprovalStale)
)

// Approval is a request to apply one exact plan of one component. The saved
// plan file (PlanFile, with PlanChecksum) is what gets applied, byte for
// byte; Revision and Fingerprint say what the plan was made from, so a
// changed spec or changed upstream outputs make the approval stale.
type Approval struct {
	ID           int64     `json:"id"`
	Env          string    `json:"env"`
	Component    string    `json:"component"`
	RunID        string    `json:"runId"`
	Revision     int       `json:"revision"`
	Fingerprint  string    `json:"fingerprint"`
	PlanFile     string    `json:"planFile"`
	PlanChecksum string    `json:"planChecksum"`
	Plan         []byte    `json:"plan"` // JSON of runner.Plan
	Status       string    `json:"status"`
	CreatedAt    time.Time `json:"createdAt"`
	DecidedBy    string    `json:"decidedBy,omitempty"`
	Reason       string    `json:"reason,omitempty"`
	DecidedAt    time.Time `json:"decidedAt,omitzero"`
}

// Approvals is the part of the store that keeps approval requests.
// ApprovalFilter selects approvals: of Env ("" = all environments), of
// Component ("" = all components), with a status among Statuses (none =
// any), with an ID above After, at most Limit (<= 0: all), oldest first or,
// with NewestFirst, newest first.
type ApprovalFilter struct {
	Env         string
	Component   string
	Statuses    []string
	Teams       []string // set: only approvals of these teams' environments
	After       int64
	Limit       int
	NewestFirst bool
}

type Approvals interface {
	// CreateApproval records a new pending approval and sets its ID. Any
	// earlier pending or approved approval of the same component becomes
	// stale in the same transaction: a new plan invalidates an old approval.
	CreateApproval(ctx context.Context, a *Approval) error
	// Approval returns one approval by ID.
	Approval(ctx context.Context, id int64) (Approval, error)
	// OpenApproval returns the component's pending or approved approval, or ErrNotFound.
	OpenApproval(ctx context.Context, env, component string) (Approval, error)
	// ListApprovals lists the approvals f selects, oldest (lowest ID) first
	// unless f.NewestFirst.
	ListApprovals(ctx context.Context, f ApprovalFilter) ([]Approval, error)
	// DecideApproval moves an approval from `from` to status `to`, recording
	// who, why and when; it fails with ErrConflict if its status is not `from`.
	DecideApproval(ctx context.Context, id int64, from, to, actor, reason string, at time.Time) error
}
