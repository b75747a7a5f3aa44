package store

import (
	"context"
	"time"
)

// ChangeSet statuses follow an approval's: pending waits for a person;
// approved is decided, its components not all applied yet; applied,
// rejected and stale (replaced by a newer change set, or a new revision)
// are final.
const (
	ChangeSetPending  = ApprovalPending
	ChangeSetApproved = ApprovalApproved
	ChangeSetRejected = ApprovalRejected
	ChangeSetApplied  = ApprovalApplied
	ChangeSetStale    = ApprovalStale
)

// ChangeSet is the whole change a gated apply stopped at, approved once:
// the exact plans of the components that wait (each an Approval, by ID)
// and the plans of the components behind them, planned ahead. Checksum is
// over Env, Revision and every component's entry.
type ChangeSet struct {
	ID         int64                `json:"id"`
	Env        string               `json:"env"`
	RunID      string               `json:"runId"`
	Revision   int                  `json:"revision"`
	Checksum   string               `json:"checksum"`
	Components []ChangeSetComponent `json:"components"`
	Status     string               `json:"status"`
	CreatedAt  time.Time            `json:"createdAt"`
	DecidedBy  string               `json:"decidedBy,omitempty"`
	Reason     string               `json:"reason,omitempty"`
	DecidedAt  time.Time            `json:"decidedAt,omitzero"`
}

// ChangeSetComponent is one component's part of a change set.
type ChangeSetComponent struct {
	Component string `json:"component"`
	// ApprovalID is the approval of a component that waits for a person
	// (its exact saved plan, PlanChecksum); 0 for a component planned
	// ahead, which is planned again when its turn comes.
	ApprovalID   int64  `json:"approvalId,omitempty"`
	PlanChecksum string `json:"planChecksum,omitempty"`
	// Resources are the addresses and actions of its plan, by address.
	Resources  []ChangeSetResource `json:"resources"`
	Add        int                 `json:"add"`
	Change     int                 `json:"change"`
	Destroy    int                 `json:"destroy"`
	Destroying bool                `json:"destroying,omitempty"`
	// KnownAfterApply, when set, says why the plan could not be shown:
	// an input known only after an upstream component is applied.
	KnownAfterApply string `json:"knownAfterApply,omitempty"`
	// Placeholders, when set, name the inputs known only after an
	// upstream apply that the plan was made with placeholders for: its
	// resources and actions are shown, its values are not.
	Placeholders []string `json:"placeholders,omitempty"`
	// PlanError, when set, says why planning it ahead failed.
	PlanError string `json:"planError,omitempty"`
	// Gated is true when the component waits for a person's decision
	// (autoApprove false); others are applied as their plan says.
	Gated bool `json:"gated,omitempty"`
}

// ChangeSetResource is one resource a change set's plan touches.
type ChangeSetResource struct {
	Address string `json:"address"`
	Action  string `json:"action"`
}

// ChangeSetFilter selects change sets of Env ("" = all environments) with
// a status among Statuses (none = any), newest first, at most Limit (<= 0:
// all).
type ChangeSetFilter struct {
	Env      string
	Statuses []string
	Teams    []string // set: only change sets of these teams' environments
	Limit    int
}

// ChangeSets is the part of the store that keeps change sets.
type ChangeSets interface {
	// CreateChangeSet records a new pending change set and sets its ID.
	// Any earlier pending or approved change set of the environment becomes
	// stale in the same transaction.
	CreateChangeSet(ctx context.Context, cs *ChangeSet) error
	// ListChangeSets lists the change sets f selects, newest first.
	ListChangeSets(ctx context.Context, f ChangeSetFilter) ([]ChangeSet, error)
	// DecideChangeSet moves a change set from `from` to `to`, recording who,
	// why and when, and, from pending to approved or rejected, moves each
	// of its components' approvals from pending to `to` with it (one already
	// decided so, with the same plan, is left as it is), all in one
	// transaction: a change set or an approval not in the expected status
	// fails it with ErrConflict, changing nothing.
	DecideChangeSet(ctx context.Context, id int64, from, to, actor, reason string, at time.Time) error
	// SupersedeRuns marks every run of env that ended awaiting approval,
	// but by, as superseded by run by, and returns their IDs.
	SupersedeRuns(ctx context.Context, env, by string) ([]string, error)
}
