// Package store is knit's memory: environments, their revisions, runs and
// component runs, component state and outputs, locks and the audit trail.
// The Store interface is implemented by sqlite.Store (and later postgres);
// storetest.Run checks any implementation against the same contract.
// Every method that changes state does so in one transaction.
package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"knit.dev/knit/internal/words"
)

// ErrNotFound is returned when the asked-for record does not exist.
var ErrNotFound = errors.New("not found")

// ErrConflict is returned when a record is not in the state a change expects
// (e.g. deciding an approval someone else already decided).
var ErrConflict = errors.New("conflict")

// ErrLockLost is returned for a write of a run that no longer holds its
// environment's lock (its lease expired and another run took it over): the
// store refuses it, so the new holder's records are never overwritten.
var ErrLockLost = errors.New("the run no longer holds the environment's lock")

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

// Environment is one environment knit knows.
type Environment struct {
	ID       string `json:"id"` // team/env
	Team     string `json:"team"`
	Name     string `json:"name"` // envName
	Metadata string `json:"metadataName,omitempty"`
	Revision int    `json:"revision"` // the latest revision seen
	// AppliedRevision is the revision the environment is applied at: the
	// one ENV means. A plan of an edited file or a commit not yet
	// reconciled never moves it.
	AppliedRevision int       `json:"appliedRevision"`
	Status          EnvStatus `json:"status"`
	CreatedAt       time.Time `json:"createdAt"`
	UpdatedAt       time.Time `json:"updatedAt"`
}

// Revision is one version of an environment's spec as knit saw it.
type Revision struct {
	Env    string `json:"env"`
	Number int    `json:"number"`
	Hash   string `json:"hash"`   // sha256 of Spec
	Source string `json:"source"` // file path or git URL@commit
	Spec   []byte `json:"-"`      // the environment as JSON (an invalid file: as written)
	// Root, when set, is the folder the spec's relative paths resolve
	// against (its file's folder; in GitOps, inside the commit's tree),
	// rather than Source's folder.
	Root string `json:"root,omitempty"`
	// Commit, Author and Message say which git commit the revision came from.
	Commit  string `json:"commit,omitempty"`
	Author  string `json:"author,omitempty"`
	Message string `json:"message,omitempty"`
	// Errors, when set, are the file's validation errors, one per line
	// (file:line:col: field: message): such a revision is never applied.
	Errors string `json:"errors,omitempty"`
	// File is the environment file as written (YAML), for diffs between
	// revisions; empty for revisions recorded before knit kept it.
	File      []byte    `json:"-"`
	CreatedAt time.Time `json:"createdAt"`
	// Verification is how the health checks after the revision's last
	// apply ended (VerificationSuccessful, …; "" when never verified).
	Verification string `json:"verification,omitempty"`
}

// How a revision's verification ended (Revision.Verification). A revision
// is good, one a rollback may go back to, when it is Successful (its
// apply succeeded, health checks and all) or Accepted (a person accepted
// it when its rollout paused).
const (
	VerificationSuccessful   = string(words.VerificationSuccessful)
	VerificationFailed       = string(words.VerificationFailed)
	VerificationInconclusive = string(words.VerificationInconclusive)
	VerificationAccepted     = string(words.VerificationAccepted)
)

// Good reports whether a rollback may go back to the revision.
func (r Revision) Good() bool {
	return r.Verification == VerificationSuccessful || r.Verification == VerificationAccepted
}

// SourcePreview is the Source of a branch's preview: a run of the branch,
// planned against the environment, never the environment's last run (nor
// its components' last component runs) in its detail, summary and row.
const SourcePreview = "preview"

// Run is one execution against an environment.
type Run struct {
	ID         string    `json:"id"`
	Env        string    `json:"env"`
	Kind       RunKind   `json:"kind"`
	Revision   int       `json:"revision"`
	Status     RunStatus `json:"status"`
	Actor      string    `json:"actor"`
	Reason     string    `json:"reason,omitempty"`
	Source     string    `json:"source,omitempty"` // cli, api, git, schedule, ttl
	Error      string    `json:"error,omitempty"`
	PID        int       `json:"pid,omitempty"`
	StartedAt  time.Time `json:"startedAt"`
	FinishedAt time.Time `json:"finishedAt,omitzero"`
	// SupersededBy names the run that replaced this one (StatusSuperseded).
	SupersededBy string `json:"supersededBy,omitempty"`
	// Policy is what the environment's policies decided about the run's
	// plan (JSON of engine.Verdict: decisions, each with its policy file
	// and rule), nil without policies.
	Policy json.RawMessage `json:"policy,omitempty"`
}

// ComponentRun is what one run did to one component.
type ComponentRun struct {
	ID        int64  `json:"id"`
	RunID     string `json:"runId"`
	Env       string `json:"env"`
	Component string `json:"component"`
	Operation string `json:"operation"`      // plan, apply, destroy, drift
	Status    string `json:"status"`         // running, succeeded, up-to-date, failed, skipped, …
	Code      string `json:"code,omitempty"` // short text: "waiting: upstream db awaiting approval"
	Reason    string `json:"reason,omitempty"`
	Cause
	PlanSummary []byte    `json:"plan,omitempty"` // JSON of runner.Plan
	Log         string    `json:"-"`
	StartedAt   time.Time `json:"startedAt"`
	FinishedAt  time.Time `json:"finishedAt,omitzero"`
}

// Cause is why a component is where it is, for machines
// (words.Cause): a reason from the closed set (words.Reason:
// "UpstreamAwaitingApproval") with the components it names and the
// approval it waits on.
type Cause = words.Cause

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

// RunOutcome is how a run ended, as RecordOutcome writes it.
type RunOutcome struct {
	RunID  string
	Status RunStatus // the run's final status
	Error  string
	At     time.Time // when it finished
	// Audit, when non-nil, is appended to the audit trail.
	Audit *AuditEvent
	// EnvStatus, when set, becomes the status of the run's environment.
	EnvStatus EnvStatus
	// Policy, when set, is recorded as the run's Policy.
	Policy json.RawMessage
	// Verification, when set, is recorded as the Verification of the
	// run's revision (how the apply's health checks ended).
	Verification string
	// ReleaseLock releases the run's lock on its environment, as
	// ReleaseLock would, in the same transaction.
	ReleaseLock bool
}

// VerificationDecision is a person's decision on a revision whose rollout
// paused (Accepted), as RecordVerification writes it.
type VerificationDecision struct {
	Env      string
	Revision int
	// Verification becomes the revision's.
	Verification string
	// From, when set, is the Verification the revision must have now
	// (otherwise ErrConflict: someone decided first).
	From string
	// EnvStatus, when set, becomes the environment's status.
	EnvStatus EnvStatus
	// Audit, when non-nil, is appended to the audit trail.
	Audit *AuditEvent
}

// EnvironmentSummary is one row of a list of environments.
type EnvironmentSummary struct {
	Environment
	LastRun *Run `json:"lastRun,omitempty"` // the newest run, nil when none
}

// EnvironmentOrder is an order of the environments list.
type EnvironmentOrder string

// The orders of EnvironmentRows; each ends with ID order, so it is total.
const (
	ByID      EnvironmentOrder = ""        // ID order
	ByStatus  EnvironmentOrder = "status"  // status, then ID
	ByUpdated EnvironmentOrder = "updated" // newest change (UpdatedAt) first, then ID
)

// EnvironmentRowFilter selects one page of the environments list: the
// environments Filter selects (After only in ID order), in Order, the
// first Offset of them skipped, at most Filter.Limit.
type EnvironmentRowFilter struct {
	Filter EnvironmentFilter
	Order  EnvironmentOrder
	Offset int
}

// EnvironmentRow is one row of the environments list: an environment with
// everything its row shows.
type EnvironmentRow struct {
	Environment
	LastRun   *Run // the newest run, nil when none
	LastDrift *Run // the newest run of kind drift, nil when none
	// DriftStatuses is each component's status in LastDrift's component
	// runs, by name.
	DriftStatuses map[string]string
	// LockHolder is the run holding the environment's lock ("" when free).
	LockHolder string
	// Components counts the environment's component states by status.
	Components map[string]int
	// AppliedCommit is the git commit of the applied revision ("": none).
	AppliedCommit string
	// Pending is the newest revision when the environment is not applied
	// at it (a file not applied yet, or one that does not validate), its
	// Spec and File left out; nil otherwise.
	Pending *Revision
}

// EnvironmentVersion says how far an environment has changed: Version
// grows with every write to anything its views (EnvironmentSummary,
// EnvironmentDetail) show, whichever process made it, so a view read at a
// version is still right while the version is unchanged. (An environment is
// never deleted, so its versions never repeat.)
type EnvironmentVersion struct {
	ID, Team string
	Version  int64
}

// EnvironmentDetail is an environment with what its page shows.
type EnvironmentDetail struct {
	Environment
	Lock      *Lock // nil: not locked
	LastRun   *Run  // the newest run, nil when none
	LastDrift *Run  // the newest run of kind drift, nil when none
	// Components are those with a state or a component run, by name.
	Components []ComponentDetail
}

// ComponentDetail is one component of an EnvironmentDetail.
type ComponentDetail struct {
	Name string
	// State is the component's state without its outputs (zero Component:
	// it has none); Outputs counts them.
	State   ComponentState
	Outputs int
	// LastRun is its newest component run, Log left empty (zero RunID:
	// none).
	LastRun ComponentRun
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

type Store interface {
	// PutRevision records env's spec. If the latest revision has the same
	// hash it is returned unchanged; otherwise a new revision (number+1) is
	// created, creating the environment on first use.
	PutRevision(ctx context.Context, env Environment, rev Revision) (Revision, error)
	// Revision returns revision n of env (n = 0: the latest).
	Revision(ctx context.Context, env string, n int) (Revision, error)
	// Revisions lists env's revisions, newest first, specs included:
	// numbers below f.Before when it is positive, at most f.Limit (<= 0:
	// all). An unknown env has none.
	Revisions(ctx context.Context, env string, f RevisionFilter) ([]Revision, error)
	Environment(ctx context.Context, id string) (Environment, error)
	// Environments lists environments in ID order: of f.Team and with
	// f.Status when set, IDs after f.After, at most f.Limit (<= 0: all).
	Environments(ctx context.Context, f EnvironmentFilter) ([]Environment, error)
	SetEnvironmentStatus(ctx context.Context, id string, status EnvStatus) error
	// DeleteUnappliedEnvironment removes an environment that was never
	// applied and never ran (such as the record of an invalid file), with
	// its revisions; its audit events stay. It reports whether it removed
	// one: an applied environment, or one with runs, is left alone.
	DeleteUnappliedEnvironment(ctx context.Context, id string) (bool, error)
	// LastGoodRevision is env's newest revision numbered below before
	// (<= 0: any) that is Good: the one a rollback goes back to. None is
	// ErrNotFound.
	LastGoodRevision(ctx context.Context, env string, before int) (Revision, error)
	// RecordVerification records d in one transaction: the revision's
	// verification, the environment's status and the audit event. An
	// unknown revision is ErrNotFound; one whose verification is not d.From
	// is ErrConflict, and nothing is written.
	RecordVerification(ctx context.Context, d VerificationDecision) error
	// SetAppliedRevision makes revision n the one env is applied at,
	// leaving Revision (the latest seen) alone. An unknown environment or
	// revision is ErrNotFound.
	SetAppliedRevision(ctx context.Context, env string, n int) error

	CreateRun(ctx context.Context, r Run) error
	// StartRun records a run's start in one transaction: rev, when not nil,
	// as PutRevision records it (of env), then r at that revision (its
	// number replaces r.Revision) as CreateRun records it. It returns the
	// revision (zero when rev is nil). A failure writes nothing.
	StartRun(ctx context.Context, env Environment, rev *Revision, r Run) (Revision, error)
	// FinishRun sets a run's final status, error and finish time. It
	// refuses (ErrLockLost), writing nothing, a run no longer recorded
	// running (another run marked it interrupted), or whose environment's
	// lock another run holds. A run whose environment has no lock may
	// finish: runs release their lock before recording their end. An
	// unknown run is ErrNotFound.
	FinishRun(ctx context.Context, id string, status RunStatus, errMsg string, at time.Time) error
	// RecordOutcome records how a run ended in one transaction: its end
	// (as FinishRun, refusing as it does), o.Audit when set, and o.EnvStatus
	// when set as the status of the run's environment. All of it commits or
	// none does, so the run, the audit trail and the environment never
	// disagree about the outcome.
	RecordOutcome(ctx context.Context, o RunOutcome) error
	Run(ctx context.Context, id string) (Run, error)
	// Runs lists env's runs ("" = all environments), newest first (by
	// StartedAt, then creation): those older than the run f.Before when set
	// (an unknown one is ErrNotFound), with status f.Status and kind f.Kind
	// when set, at most f.Limit (<= 0: all).
	Runs(ctx context.Context, env string, f RunFilter) ([]Run, error)
	// LastRuns returns the newest run of each of envs that has one, by env.
	LastRuns(ctx context.Context, envs []string) (map[string]Run, error)
	// EnvironmentSummaries is Environments, each with its newest run, in
	// one read.
	EnvironmentSummaries(ctx context.Context, f EnvironmentFilter) ([]EnvironmentSummary, error)
	// EnvironmentRows reads one page of the environments list, each row
	// with what it shows, and how many environments f.Filter selects in
	// all (After, Offset and Limit aside), in one query: its cost grows
	// with the page and its offset, not with every environment's runs.
	EnvironmentRows(ctx context.Context, f EnvironmentRowFilter) (rows []EnvironmentRow, total int, err error)
	// EnvironmentDetail reads what an environment's page shows: the
	// environment, its lock, its newest run and newest drift run, and its
	// components. It is two reads, not one snapshot. An unknown environment
	// is ErrNotFound.
	EnvironmentDetail(ctx context.Context, id string) (EnvironmentDetail, error)
	// EnvironmentVersions lists the versions of the environments f selects,
	// in ID order, as Environments would list them.
	EnvironmentVersions(ctx context.Context, f EnvironmentFilter) ([]EnvironmentVersion, error)
	// EnvironmentVersion is one environment's version; an unknown
	// environment is ErrNotFound.
	EnvironmentVersion(ctx context.Context, id string) (int64, error)
	// InterruptRuns marks every run of env still "running" whose PID is not
	// alive per the alive func as interrupted (a crashed knit), returning their IDs.
	InterruptRuns(ctx context.Context, env string, alive func(pid int) bool, at time.Time) ([]string, error)

	// StartComponentRun and FinishComponentRun refuse (ErrLockLost), in
	// the transaction that would write and writing nothing, a run that does
	// not hold its environment's lock: taken over by another run, released,
	// or never taken. A run whose lease expired may still write while no
	// other run has taken the lock. FinishComponentRun judges the run and
	// environment recorded when the component run started.
	//
	// StartComponentRun records component runs before their tools start,
	// all in one transaction (all or none), and sets their IDs. Status
	// (empty: running), Reason, PlanSummary, Log and FinishedAt are stored
	// as given, so a component run that ends without running a tool (up to
	// date, skipped) is recorded whole in one call.
	StartComponentRun(ctx context.Context, crs ...*ComponentRun) error
	// FinishComponentRun records the outcome and, when state is non-nil, the
	// component's new state (outputs included), in one transaction.
	FinishComponentRun(ctx context.Context, cr ComponentRun, state *ComponentState) error
	ComponentRuns(ctx context.Context, runID string) ([]ComponentRun, error)
	// LatestComponentRuns returns the newest component run of each of
	// env's components (Log left empty), by component name, in one query.
	LatestComponentRuns(ctx context.Context, env string) ([]ComponentRun, error)
	// LastComponentRun returns the newest component run of env's component (log included).
	LastComponentRun(ctx context.Context, env, component string) (ComponentRun, error)

	ComponentStates(ctx context.Context, env string) (map[string]ComponentState, error)
	// CountComponents counts the components of every environment whose state has status.
	CountComponents(ctx context.Context, status string) (int, error)
	PutComponentState(ctx context.Context, s ComponentState) error

	// AcquireLock takes env's lock for l.RunID for lease, as the store's
	// clock counts: it sets Acquired to the store's now and Expires to now
	// plus lease, ignoring l's, and returns the lock as stored. It takes
	// over a lease that has expired, or whose holder dead reports as gone
	// (dead may be nil; it is called inside the store's transaction and
	// should be quick); a live lease held by another run yields
	// *LockedError. The holder acquiring again extends its lease and keeps
	// its Acquired. lease must be positive.
	AcquireLock(ctx context.Context, l Lock, lease time.Duration, dead func(holder Lock) bool) (Lock, error)
	// RenewLock extends runID's lease on env to the store's now + lease,
	// or fails with ErrLockLost when another run holds it, or none does. A
	// lease that expired but was not taken over may be renewed. lease must
	// be positive.
	RenewLock(ctx context.Context, env, runID string, lease time.Duration) error
	// Lock returns env's current holder, or ErrNotFound. A lock whose
	// lease expired is returned until another run takes it or it is
	// released.
	Lock(ctx context.Context, env string) (Lock, error)
	// ReleaseLock frees env's lock if runID holds it; otherwise it does
	// nothing and is not an error.
	ReleaseLock(ctx context.Context, env, runID string) error

	Approvals
	ChangeSets
	Tokens
	ToolProcesses
	Outbox
	Expiries
	Previews
	TFStates
	Pipelines
	Rollouts
	WaveRollouts

	AppendAudit(ctx context.Context, e AuditEvent) error
	// Audit lists events oldest first (by ID): of f.Env and by f.Actor
	// when set, at or after f.Since and before f.Until (zero: unbounded),
	// IDs after f.After, at most f.Limit (<= 0: all).
	Audit(ctx context.Context, f AuditFilter) ([]AuditEvent, error)

	// Version is a number that changes whenever anything in the store
	// changed since the last call, whoever wrote it: readers cache by it.
	Version(ctx context.Context) (int64, error)

	Close() error
}
