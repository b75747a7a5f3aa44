package store

import (
	"context"
	"time"

	"knit.dev/knit/internal/words"
)

// Pipeline is a promotion pipeline as the server last read it from git:
// its definition (spec.Pipeline as JSON) and the commit it came from.
type Pipeline struct {
	Name       string    `json:"name"`
	Team       string    `json:"team"`
	Definition []byte    `json:"definition"`
	Commit     string    `json:"commit"`
	UpdatedAt  time.Time `json:"updatedAt"`
}

// Release is one immutable, content-addressed release of a pipeline: its
// template identity and promote parameters (JSON), and the commit that
// brought it into the first stage. Seq orders a pipeline's releases.
type Release struct {
	Pipeline string `json:"pipeline"`
	ID       string `json:"id"`
	Seq      int64  `json:"seq"`
	Template string `json:"template"`
	Params   []byte `json:"params"`
	Commit   string `json:"commit"`
	Author   string `json:"author"`
	// AuthorVerified says Author is authenticated: the token that created
	// the release, or the signer of a commit whose signature verified
	// against keys the server trusts. False: the name an unsigned commit
	// claims, which anyone can write.
	AuthorVerified bool      `json:"authorVerified"`
	Message        string    `json:"message"`
	CreatedAt      time.Time `json:"createdAt"`
}

// Stage states of a release (see StageState).
const (
	StageQueued    = string(words.StageQueued)    // a person asked for it again (a rollback): the server applies it
	StageApplying  = string(words.StageApplying)  // a run applies the release to the stage
	StageSucceeded = string(words.StageSucceeded) // applied and verified: soaking, then free to move on
	StageFailed    = string(words.StageFailed)    // its run failed there: it never moves on
)

// StageState is where a release stands in one stage, with the run that
// applied it and, once verified, when (soak counts from VerifiedAt).
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

// StageEvent is one change of a StageState, in a pipeline's history.
type StageEvent struct {
	Seq int64 `json:"seq"`
	StageState
}

// PromotionApproval is a person's approval of a release entering a stage.
type PromotionApproval struct {
	Pipeline string `json:"pipeline"`
	Release  string `json:"release"`
	Stage    string `json:"stage"`
	Actor    string `json:"actor"`
	Reason   string `json:"reason,omitempty"`
	// Forced is an admin's promotion past every gate (soak, windows,
	// approvals): audited as such.
	Forced     bool      `json:"forced,omitempty"`
	ApprovedAt time.Time `json:"approvedAt"`
}

// Pipelines is the part of the Store that keeps promotion pipelines, their
// releases, where each release stands in each stage (and how it got
// there) and the approvals of promotions.
type Pipelines interface {
	// PutPipeline records p's definition, replacing the one of its name.
	PutPipeline(ctx context.Context, p Pipeline) error
	// Pipeline is the pipeline named name (ErrNotFound: none).
	Pipeline(ctx context.Context, name string) (Pipeline, error)
	// ListPipelines lists every pipeline, by name.
	ListPipelines(ctx context.Context) ([]Pipeline, error)
	// AddRelease records r with the next Seq of its pipeline, unless a
	// release of that ID exists: then it returns that one and false.
	AddRelease(ctx context.Context, r Release) (Release, bool, error)
	// Releases lists a pipeline's releases, newest (highest Seq) first.
	Releases(ctx context.Context, pipeline string) ([]Release, error)
	// SetStage records s as its release's state in its stage, provided
	// the state there is still from ("" : none yet), else ErrConflict; it
	// appends s to the pipeline's history and audit, when non-nil, in the
	// same transaction.
	SetStage(ctx context.Context, s StageState, from string, audit *AuditEvent) error
	// StageStates lists where every release of a pipeline stands, by
	// release and stage.
	StageStates(ctx context.Context, pipeline string) ([]StageState, error)
	// StageHistory lists every change of a pipeline's stage states,
	// oldest first.
	StageHistory(ctx context.Context, pipeline string) ([]StageEvent, error)
	// ApprovePromotion records a's approval and audit, when non-nil, in
	// one transaction; ErrConflict when a.Actor approved it already.
	ApprovePromotion(ctx context.Context, a PromotionApproval, audit *AuditEvent) error
	// PromotionApprovals lists a pipeline's approvals, oldest first.
	PromotionApprovals(ctx context.Context, pipeline string) ([]PromotionApproval, error)
	StageFiles
}

// Stage change states (StageChange.State).
const (
	StageChangePending  = string(words.StageChangePending)  // waits for approvals
	StageChangeQueued   = string(words.StageChangeQueued)   // immediate or approved: the server applies it
	StageChangeApplying = string(words.StageChangeApplying) // a run applies it
	StageChangeApplied  = string(words.StageChangeApplied)  // the stage's environment runs it
	StageChangeFailed   = string(words.StageChangeFailed)   // its run failed
)

// StageFile is what the promotion controller knows of one stage's own
// file (the file the pipeline stage names): its content at the last head
// it read (a change is a new content there, seen once), the commit whose
// copy of the file the stage's environment got last, and the newest
// change of it. Version orders writes: PutStageFile takes the one read.
type StageFile struct {
	Pipeline string `json:"pipeline"`
	Stage    string `json:"stage"`
	Version  int64  `json:"version"`
	// SeenHash is the SHA-256 of the file at SeenCommit.
	SeenHash   string `json:"seenHash"`
	SeenCommit string `json:"seenCommit"`
	// AppliedCommit is the commit whose copy of the file the stage's
	// environment got last ("": a release's own commit, as before knit
	// tracked stage files).
	AppliedCommit string      `json:"appliedCommit,omitempty"`
	Change        StageChange `json:"change"`
}

// StageChange is one change of a stage's own file, from one commit: its
// diff from what the stage runs, and where it stands (State "": none yet).
// It applies at Release, the release the stage runs.
type StageChange struct {
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

// StageFiles is the part of Pipelines that keeps what the promotion
// controller knows of each stage's own file.
type StageFiles interface {
	// StageFiles lists a pipeline's stage files, by stage.
	StageFiles(ctx context.Context, pipeline string) ([]StageFile, error)
	// PutStageFile records f provided the stage file's version is still
	// f.Version (0: none recorded yet), else ErrConflict; it stores
	// f.Version+1 and appends audit, when non-nil, in one transaction.
	PutStageFile(ctx context.Context, f StageFile, audit *AuditEvent) error
}
