package store

import (
	"context"
	"time"

	"knit.dev/knit/internal/words"
)

// Preview is what a branch's commit would do to one environment: a plan
// of the environment's file at that commit against what the environment
// has applied, made by knit serve (--preview-branches) and never applied.
type Preview struct {
	Branch string `json:"branch"`
	Commit string `json:"commit"`
	Env    string `json:"env"`
	// Team is the environment's team: a team-limited token sees only the
	// previews of its teams' environments.
	Team string `json:"team"`
	// Change is how the branch changes the environment: PreviewCreate (a
	// new file), PreviewUpdate or PreviewDestroy (a removed file).
	Change string `json:"change"`
	// Status is PreviewPlanned, PreviewFailed, PreviewInvalid or
	// PreviewTimedOut.
	Status string `json:"status"`
	// Checksum is the plan's checksum over its components (engine
	// PlanChecksum): an apply whose plan has the same one applies what the
	// preview showed.
	Checksum string `json:"checksum,omitempty"`
	// BaseRevision is the environment's applied revision the branch was
	// planned against (0: none).
	BaseRevision int `json:"baseRevision"`
	// RunID is the plan run that made it (empty when none ran).
	RunID string `json:"runId,omitempty"`
	Error string `json:"error,omitempty"`
	// Components and Policy are the engine's result as JSON: the store
	// keeps them as they are.
	Components []byte    `json:"-"`
	Policy     []byte    `json:"-"`
	CreatedAt  time.Time `json:"createdAt"`
}

// Preview changes and statuses.
const (
	PreviewCreate  = string(words.PreviewCreate)
	PreviewUpdate  = string(words.PreviewUpdate)
	PreviewDestroy = string(words.PreviewDestroy)

	PreviewPlanned = string(words.PreviewPlanned)
	PreviewFailed  = string(words.PreviewFailed)
	PreviewInvalid = string(words.PreviewInvalid)
	// PreviewTimedOut: the preview did not end within its deadline, and
	// its tools were stopped.
	PreviewTimedOut = string(words.PreviewTimedOut)
)

// PreviewFilter selects previews: of Branch (every branch's when empty:
// what a teardown asks of one Env), of Commit when
// set (else every commit of the branch), of environments of Teams when
// set, of Env when set, at most Limit (<= 0: 1000), newest first.
type PreviewFilter struct {
	Branch, Commit, Env string
	Teams               []string
	Limit               int
}

// Previews is the part of the Store that keeps branch previews.
type Previews interface {
	// PutPreview records p, replacing the preview of the same branch,
	// commit and environment.
	PutPreview(ctx context.Context, p Preview) error
	// ListPreviews lists what f selects, newest first, then by environment.
	ListPreviews(ctx context.Context, f PreviewFilter) ([]Preview, error)
	// PreviewsByChecksum lists env's planned previews whose Checksum is
	// checksum, newest first (none: an empty list).
	PreviewsByChecksum(ctx context.Context, env, checksum string) ([]Preview, error)
}
