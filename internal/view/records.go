package view

import (
	"encoding/json"
	"time"

	"knit.dev/knit/internal/words"
)

// The records below are the library's read models of what the store
// keeps: the fields, JSON names and shapes the API has always shown, held
// apart from the store's rows so that renaming a column changes neither
// the API nor the OpenAPI document. internal/knit maps each store row to
// its record (knit's TestRecordsMapEveryStoreField keeps them in step).

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
	AppliedRevision int             `json:"appliedRevision"`
	Status          words.EnvStatus `json:"status"`
	CreatedAt       time.Time       `json:"createdAt"`
	UpdatedAt       time.Time       `json:"updatedAt"`
}

// Run is one execution against an environment.
type Run struct {
	ID         string          `json:"id"`
	Env        string          `json:"env"`
	Kind       words.RunKind   `json:"kind"`
	Revision   int             `json:"revision"`
	Status     words.RunStatus `json:"status"`
	Actor      string          `json:"actor"`
	Reason     string          `json:"reason,omitempty"`
	Source     string          `json:"source,omitempty"` // cli, api, git, schedule, ttl
	Error      string          `json:"error,omitempty"`
	PID        int             `json:"pid,omitempty"`
	StartedAt  time.Time       `json:"startedAt"`
	FinishedAt time.Time       `json:"finishedAt,omitzero"`
	// SupersededBy names the run that replaced this one (superseded).
	SupersededBy string `json:"supersededBy,omitempty"`
	// Policy is what the environment's policies decided about the run's
	// plan (decisions, each with its policy file and rule), nil without
	// policies.
	Policy json.RawMessage `json:"policy,omitempty"`
}

// ComponentRun is what one run did to one component. Log is its tool's
// output, kept out of the JSON (GET …/logs serves it).
type ComponentRun struct {
	ID        int64  `json:"id"`
	RunID     string `json:"runId"`
	Env       string `json:"env"`
	Component string `json:"component"`
	Operation string `json:"operation"`      // plan, apply, destroy, drift
	Status    string `json:"status"`         // running, succeeded, up-to-date, failed, skipped, …
	Code      string `json:"code,omitempty"` // short text: "waiting: upstream db awaiting approval"
	Reason    string `json:"reason,omitempty"`
	words.Cause
	PlanSummary []byte    `json:"plan,omitempty"` // JSON of the plan's summary
	Log         string    `json:"-"`
	StartedAt   time.Time `json:"startedAt"`
	FinishedAt  time.Time `json:"finishedAt,omitzero"`
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

// Revision is one version of an environment's file as knit saw it. The
// file as written is not part of the record (knit diff reads it through
// the library).
type Revision struct {
	Env    string `json:"env"`
	Number int    `json:"number"`
	Hash   string `json:"hash"`   // sha256 of Spec
	Source string `json:"source"` // file path or git URL@commit
	// Spec is the environment as JSON (an invalid file: as written); the
	// API shows it as text of its own.
	Spec []byte `json:"-"`
	// Root, when set, is the folder the spec's relative paths resolve
	// against.
	Root string `json:"root,omitempty"`
	// Commit, Author and Message say which git commit the revision came from.
	Commit  string `json:"commit,omitempty"`
	Author  string `json:"author,omitempty"`
	Message string `json:"message,omitempty"`
	// Errors, when set, are the file's validation errors, one per line
	// (file:line:col: field: message): such a revision is never applied.
	Errors    string    `json:"errors,omitempty"`
	CreatedAt time.Time `json:"createdAt"`
	// Verification is how the health checks after the revision's last
	// apply ended (VerificationSuccessful, …; "" when never verified).
	Verification string `json:"verification,omitempty"`
}

// Good reports whether a rollback may go back to the revision: its
// verification was successful, or a person accepted it.
func (r Revision) Good() bool {
	return r.Verification == string(words.VerificationSuccessful) || r.Verification == string(words.VerificationAccepted)
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

// Approval is a request to apply one exact plan of one component: the
// saved plan file (PlanFile, PlanChecksum) made from Revision and
// Fingerprint; Plan is its summary as JSON.
type Approval struct {
	ID           int64     `json:"id"`
	Env          string    `json:"env"`
	Component    string    `json:"component"`
	RunID        string    `json:"runId"`
	Revision     int       `json:"revision"`
	Fingerprint  string    `json:"fingerprint"`
	PlanFile     string    `json:"planFile"`
	PlanChecksum string    `json:"planChecksum"`
	Plan         []byte    `json:"plan"`
	Status       string    `json:"status"`
	CreatedAt    time.Time `json:"createdAt"`
	DecidedBy    string    `json:"decidedBy,omitempty"`
	Reason       string    `json:"reason,omitempty"`
	DecidedAt    time.Time `json:"decidedAt,omitzero"`
}

// ChangeSet is the whole change a gated apply stopped at, approved once:
// the exact plans of the components that wait and the plans of those
// behind them. Checksum is over Env, Revision and every component.
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

// ChangeSetComponent is one component's part of a change set: its
// approval (0: planned ahead), its plan's resources and counts, and why
// its plan could not be shown or made, if so.
type ChangeSetComponent struct {
	Component       string              `json:"component"`
	ApprovalID      int64               `json:"approvalId,omitempty"`
	PlanChecksum    string              `json:"planChecksum,omitempty"`
	Resources       []ChangeSetResource `json:"resources"`
	Add             int                 `json:"add"`
	Change          int                 `json:"change"`
	Destroy         int                 `json:"destroy"`
	Destroying      bool                `json:"destroying,omitempty"`
	KnownAfterApply string              `json:"knownAfterApply,omitempty"`
	Placeholders    []string            `json:"placeholders,omitempty"`
	PlanError       string              `json:"planError,omitempty"`
	// Gated: the component waits for a person's decision.
	Gated bool `json:"gated,omitempty"`
}

// ChangeSetResource is one resource a change set's plan touches.
type ChangeSetResource struct {
	Address string `json:"address"`
	Action  string `json:"action"`
}

// Token is an API token of knit serve as a person may see it: never its
// secret nor the secret's hash.
type Token struct {
	Name string     `json:"name"`
	Role words.Role `json:"role"`
	// Teams limits the token to these teams' environments; empty: every team.
	Teams     []string  `json:"teams,omitempty"`
	CreatedBy string    `json:"createdBy,omitempty"`
	CreatedAt time.Time `json:"createdAt"`
	RevokedAt time.Time `json:"revokedAt,omitzero"`
}

// TTL is when an ephemeral environment (spec.ttl) is torn down: At, and
// the expiry a warning already went out for (WarnedFor, zero: none).
type TTL struct {
	Env       string    `json:"env"`
	At        time.Time `json:"at"`
	WarnedFor time.Time `json:"warnedFor,omitzero"`
}

// EnvironmentVersion says how far an environment has changed: Version
// grows with every write to anything its views show, so a view read at a
// version is still right while the version is unchanged.
type EnvironmentVersion struct {
	ID, Team string
	Version  int64
}

// ReleaseRecord is one immutable release of a pipeline as recorded: its
// template and promote parameters (JSON), and the commit that brought it
// into the first stage. Seq orders a pipeline's releases.
type ReleaseRecord struct {
	Pipeline string `json:"pipeline"`
	ID       string `json:"id"`
	Seq      int64  `json:"seq"`
	Template string `json:"template"`
	Params   []byte `json:"params"`
	Commit   string `json:"commit"`
	Author   string `json:"author"`
	// AuthorVerified: Author is a token's name or a trusted commit
	// signature's signer, not a name an unsigned commit claims.
	AuthorVerified bool      `json:"authorVerified"`
	Message        string    `json:"message"`
	CreatedAt      time.Time `json:"createdAt"`
}

// EnvironmentOrder is an order of the environments list.
type EnvironmentOrder string

// The orders of the environments list; each ends with ID order, so it is
// total.
const (
	ByID      EnvironmentOrder = ""        // ID order
	ByStatus  EnvironmentOrder = "status"  // status, then ID
	ByUpdated EnvironmentOrder = "updated" // newest change first, then ID
)

// PipelineRecord is a promotion pipeline as the server last read it from
// git: its definition (JSON) and the commit it came from.
type PipelineRecord struct {
	Name       string    `json:"name"`
	Team       string    `json:"team"`
	Definition []byte    `json:"definition"`
	Commit     string    `json:"commit"`
	UpdatedAt  time.Time `json:"updatedAt"`
}

// StageState is where a release stands in one stage (queued, applying,
// succeeded, failed), with the run that applied it and, once verified,
// when (soak counts from VerifiedAt).
type StageState struct {
	Pipeline   string    `json:"pipeline"`
	Release    string    `json:"release"`
	Stage      string    `json:"stage"`
	State      string    `json:"state"`
	RunID      string    `json:"runId,omitempty"`
	Reason     string    `json:"reason,omitempty"`
	Message    string    `json:"message,omitempty"`
	Actor      string    `json:"actor,omitempty"`
	ChangedAt  time.Time `json:"changedAt"`
	VerifiedAt time.Time `json:"verifiedAt,omitzero"`
}

// PromotionApproval is a person's approval of a release entering a stage;
// Forced is an admin's promotion past every gate.
type PromotionApproval struct {
	Pipeline   string    `json:"pipeline"`
	Release    string    `json:"release"`
	Stage      string    `json:"stage"`
	Actor      string    `json:"actor"`
	Reason     string    `json:"reason,omitempty"`
	Forced     bool      `json:"forced,omitempty"`
	ApprovedAt time.Time `json:"approvedAt"`
}

// StageFileRecord is what the promotion controller knows of one stage's
// own file: its hash and commit at the last head it read, the commit
// whose copy of the file the stage's environment got last ("": a
// release's own), and the newest change of it; Version orders writes.
type StageFileRecord struct {
	Pipeline      string            `json:"pipeline"`
	Stage         string            `json:"stage"`
	Version       int64             `json:"version"`
	SeenHash      string            `json:"seenHash"`
	SeenCommit    string            `json:"seenCommit"`
	AppliedCommit string            `json:"appliedCommit,omitempty"`
	Change        StageChangeRecord `json:"change"`
}

// StageChangeRecord is one change of a stage's own file, from one commit,
// with its diff and where it stands (State "": none yet).
type StageChangeRecord struct {
	ID             string    `json:"id"`
	Commit         string    `json:"commit"`
	Hash           string    `json:"hash"`
	Diff           string    `json:"diff"`
	State          string    `json:"state"`
	Release        string    `json:"release,omitempty"`
	RunID          string    `json:"runId,omitempty"`
	Reason         string    `json:"reason,omitempty"`
	Message        string    `json:"message,omitempty"`
	Author         string    `json:"author"`
	AuthorVerified bool      `json:"authorVerified"`
	Subject        string    `json:"subject"`
	Actor          string    `json:"actor,omitempty"`
	ChangedAt      time.Time `json:"changedAt"`
}
