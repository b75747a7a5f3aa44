// Package store is knit's memory: environments, their revisions, runs and
// component runs, component state and outputs, locks and the audit trail.
// The Store interface is implemented by sqlite.Store (and later postgres);
// storetest.Run checks any implementation against the same contract.
// Every method that changes state does so in one transaction.
package store

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// ErrNotFound is returned when the asked-for record does not exist.
var ErrNotFound = errors.New("not found")

// ErrConflict is returned when a record is not in the state a change expects
// (e.g. deciding an approval someone else already decided).
var ErrConflict = errors.New("conflict")

// LockedError is returned by AcquireLock when a live lease is held by someone else.
type LockedError struct {
	Env    string
	Holder Lock
}

func (e *LockedError) Error() string {
	h := e.Holder
	return fmt.Sprintf("environment %s is locked by run %s (pid %d on %s, %s, since %s, lease until %s)",
		e.Env, h.RunID, h.PID, h.Host, h.Owner, h.Acquired.UTC().Format(time.RFC3339), h.Expires.UTC().Format(time.RFC3339))
}

// Run and component run statuses.
const (
	StatusRunning     = "running"
	StatusSucceeded   = "succeeded"
	StatusFailed      = "failed"
	StatusInterrupted = "interrupted"
	StatusAwaiting    = "awaiting-approval"
)

// Environment is one environment knit knows.
type Environment struct {
	ID        string    `json:"id"` // team/env
	Team      string    `json:"team"`
	Name      string    `json:"name"` // envName
	Metadata  string    `json:"metadataName,omitempty"`
	Revision  int       `json:"revision"` // latest revision number
	Status    string    `json:"status"`   // e.g. provisioned, failed, torn-down, awaiting-approval
	CreatedAt time.Time `json:"createdAt"`
	UpdatedAt time.Time `json:"updatedAt"`
}

// Revision is one version of an environment's spec as knit saw it.
type Revision struct {
	Env       string    `json:"env"`
	Number    int       `json:"number"`
	Hash      string    `json:"hash"`   // sha256 of Spec
	Source    string    `json:"source"` // file path or git URL@commit
	Spec      []byte    `json:"-"`      // the environment as JSON
	CreatedAt time.Time `json:"createdAt"`
}

// Run is one execution against an environment.
type Run struct {
	ID         string    `json:"id"`
	Env        string    `json:"env"`
	Kind       string    `json:"kind"` // plan, apply, drift, destroy
	Revision   int       `json:"revision"`
	Status     string    `json:"status"`
	Actor      string    `json:"actor"`
	Reason     string    `json:"reason,omitempty"`
	Error      string    `json:"error,omitempty"`
	PID        int       `json:"pid,omitempty"`
	StartedAt  time.Time `json:"startedAt"`
	FinishedAt time.Time `json:"finishedAt,omitzero"`
}

// ComponentRun is what one run did to one component.
type ComponentRun struct {
	ID          int64     `json:"id"`
	RunID       string    `json:"runId"`
	Env         string    `json:"env"`
	Component   string    `json:"component"`
	Operation   string    `json:"operation"` // plan, apply, destroy, drift
	Status      string    `json:"status"`    // running, succeeded, up-to-date, failed, skipped, …
	Reason      string    `json:"reason,omitempty"`
	PlanSummary []byte    `json:"plan,omitempty"` // JSON of runner.Plan
	Log         string    `json:"-"`
	StartedAt   time.Time `json:"startedAt"`
	FinishedAt  time.Time `json:"finishedAt,omitzero"`
}

// OutputValue is one stored output. Value is JSON; sensitive values are
// encrypted at rest by the store and decrypted on read.
type OutputValue struct {
	Value     []byte `json:"value"`
	Sensitive bool   `json:"sensitive,omitempty"`
}

// ComponentState is the last known state of one component.
type ComponentState struct {
	Env         string                 `json:"env"`
	Component   string                 `json:"component"`
	Status      string                 `json:"status"` // applied, failed, destroyed, awaiting-approval, …
	Fingerprint string                 `json:"fingerprint,omitempty"`
	Revision    int                    `json:"revision"`
	Outputs     map[string]OutputValue `json:"outputs,omitempty"`
	UpdatedAt   time.Time              `json:"updatedAt"`
}

// Lock is a lease on an environment, held by one run.
type Lock struct {
	Env      string    `json:"env"`
	RunID    string    `json:"runId"`
	Owner    string    `json:"owner"` // OS user or token name
	PID      int       `json:"pid"`
	Host     string    `json:"host"`
	Acquired time.Time `json:"acquired"`
	Expires  time.Time `json:"expires"`
}

// AuditEvent records who did what to an environment, when and why.
type AuditEvent struct {
	ID        int64     `json:"id"`
	Env       string    `json:"env"`
	Actor     string    `json:"actor"`
	Action    string    `json:"action"` // apply, approve, reject, drift, teardown, …
	Component string    `json:"component,omitempty"`
	Revision  int       `json:"revision,omitempty"`
	RunID     string    `json:"runId,omitempty"`
	Reason    string    `json:"reason,omitempty"`
	Detail    string    `json:"detail,omitempty"`
	Time      time.Time `json:"time"`
}

// Store is knit's persistence. All methods are safe for concurrent use.
type Store interface {
	// PutRevision records env's spec. If the latest revision has the same
	// hash it is returned unchanged; otherwise a new revision (number+1) is
	// created, creating the environment on first use.
	PutRevision(ctx context.Context, env Environment, rev Revision) (Revision, error)
	// Revision returns revision n of env (n = 0: the latest).
	Revision(ctx context.Context, env string, n int) (Revision, error)
	Environment(ctx context.Context, id string) (Environment, error)
	Environments(ctx context.Context) ([]Environment, error)
	SetEnvironmentStatus(ctx context.Context, id, status string) error

	CreateRun(ctx context.Context, r Run) error
	// FinishRun sets a run's final status, error and finish time.
	FinishRun(ctx context.Context, id, status, errMsg string, at time.Time) error
	Run(ctx context.Context, id string) (Run, error)
	// Runs lists env's runs, newest first; limit <= 0 means all.
	Runs(ctx context.Context, env string, limit int) ([]Run, error)
	// InterruptRuns marks every run of env still "running" whose PID is not
	// alive per the alive func as interrupted (a crashed knit), returning their IDs.
	InterruptRuns(ctx context.Context, env string, alive func(pid int) bool, at time.Time) ([]string, error)

	// StartComponentRun records a component run before the tool starts and
	// sets its ID. Status (empty: running), Reason, PlanSummary, Log and
	// FinishedAt are stored as given, so a component run that ends without
	// running a tool (up to date, skipped) is recorded whole in one call.
	StartComponentRun(ctx context.Context, cr *ComponentRun) error
	// FinishComponentRun records the outcome and, when state is non-nil, the
	// component's new state (outputs included), in one transaction.
	FinishComponentRun(ctx context.Context, cr ComponentRun, state *ComponentState) error
	ComponentRuns(ctx context.Context, runID string) ([]ComponentRun, error)
	// LastComponentRun returns the newest component run of env's component (log included).
	LastComponentRun(ctx context.Context, env, component string) (ComponentRun, error)

	ComponentStates(ctx context.Context, env string) (map[string]ComponentState, error)
	PutComponentState(ctx context.Context, s ComponentState) error

	// AcquireLock takes env's lock for l.RunID until l.Expires. It takes over
	// a lease that has expired at now, or whose holder dead reports as gone
	// (dead may be nil); a live lease held by another run yields *LockedError.
	AcquireLock(ctx context.Context, l Lock, now time.Time, dead func(holder Lock) bool) error
	RenewLock(ctx context.Context, env, runID string, expires time.Time) error
	ReleaseLock(ctx context.Context, env, runID string) error

	Approvals

	AppendAudit(ctx context.Context, e AuditEvent) error
	// Audit lists events, oldest first; env "" means all environments.
	Audit(ctx context.Context, env string) ([]AuditEvent, error)

	Close() error
}
