package view

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"knit.dev/knit/internal/words"
)

// Why a release waits at the entry of a stage, or stopped in one.
const (
	WaitSoaking            = string(words.WaitSoaking)            // the stage before has not soaked it long enough
	WaitWindowClosed       = string(words.WaitWindowClosed)       // no promotion window of the stage is open
	WaitAwaitingApproval   = string(words.WaitAwaitingApproval)   // the stage needs more approvals
	WaitVerificationFailed = string(words.WaitVerificationFailed) // its health checks failed there: it never moves on
	WaitApplyFailed        = string(words.WaitApplyFailed)        // its run failed there before verification
	WaitApplying           = string(words.WaitApplying)           // a run applies it now
	WaitPaused             = string(words.WaitPaused)             // its rollout paused there: a person accepts it or rolls back
	WaitReady              = string(words.WaitReady)              // every gate is open: the server applies it
)

// Pipeline is a promotion pipeline's status: each stage, left to right.
type Pipeline struct {
	Name   string  `json:"name"`
	Team   string  `json:"team"`
	Commit string  `json:"commit"`
	Stages []Stage `json:"stages"`
}

// Stage is one stage of a pipeline: its environment, the release it
// holds (the last verified), the last release tried there, and the
// release waiting to enter it with why it waits.
type Stage struct {
	Name string `json:"name"`
	Env  string `json:"env"`
	// Soak, Approvals and RequireOtherApprover are the stage's rules.
	Soak                 string `json:"soak,omitempty"`
	Approvals            int    `json:"approvals,omitempty"`
	RequireOtherApprover bool   `json:"requireOtherApprover,omitempty"`
	// Windows say when a release may enter the stage, one a window
	// (`open "0 9 * * 1-5" for 8h UTC`); none: at any time.
	Windows []string `json:"windows,omitempty"`
	// Current is the newest release verified here.
	Current *StageRelease `json:"current,omitempty"`
	// Last is the newest release tried here (applying, failed or current).
	Last *StageRelease `json:"last,omitempty"`
	// Waiting is the release next in line for this stage, and why it waits.
	Waiting *Waiting `json:"waiting,omitempty"`
	// RollbackTo is the release verified here before Current: what a
	// rollback of the stage applies again ("" : none).
	RollbackTo string `json:"rollbackTo,omitempty"`
	// EnvStatus is the stage's environment as it is now, whatever the
	// pipeline last did there: torn down, failed, drifted, paused by a
	// person or a run outside the pipeline ("": never applied). Current
	// is what the pipeline verified there, not a promise it still runs.
	EnvStatus words.EnvStatus `json:"envStatus,omitempty"`
	// ApplyStageChanges is what a change of the stage's own file does:
	// immediate (applied at once) or pending (waits for approvals).
	ApplyStageChanges string `json:"applyStageChanges"`
	// StageChange is the newest change of the stage's own file since the
	// server tracks it (nil: none): Pending with its diff until approved,
	// then applied to the stage's current release.
	StageChange *StageChange `json:"stageChange,omitempty"`
}

// Stage change states (StageChange.State).
const (
	StageChangePending  = string(words.StageChangePending)
	StageChangeQueued   = string(words.StageChangeQueued)
	StageChangeApplying = string(words.StageChangeApplying)
	StageChangeApplied  = string(words.StageChangeApplied)
	StageChangeFailed   = string(words.StageChangeFailed)
)

// StageChange is a merged commit's change of a stage's own file: ID is
// c- and the commit's first 12 hex digits, the one knit promote --change
// approves; Diff is unified, from what the stage runs to the commit's
// file. Release is the release it applies at (set once it starts);
// Reason and Message say why it waits (AwaitingApproval, Ready, Applying)
// or why it failed.
type StageChange struct {
	ID             string    `json:"id"`
	Commit         string    `json:"commit"`
	Author         string    `json:"author"`
	AuthorVerified bool      `json:"authorVerified"`
	Subject        string    `json:"subject"`
	Diff           string    `json:"diff"`
	State          string    `json:"state"`
	Release        string    `json:"release,omitempty"`
	RunID          string    `json:"runId,omitempty"`
	Reason         string    `json:"reason,omitempty"`
	Message        string    `json:"message,omitempty"`
	ChangedAt      time.Time `json:"changedAt"`
	Approvals      []string  `json:"approvals,omitempty"`
	// Approval is what the stage asks of the change's approvals.
	Approval *WaitApproval `json:"approval,omitempty"`
}

// StageRelease is a release's state in a stage.
type StageRelease struct {
	Release    string    `json:"release"`
	State      string    `json:"state"`
	Reason     string    `json:"reason,omitempty"`
	Message    string    `json:"message,omitempty"`
	RunID      string    `json:"runId,omitempty"`
	ChangedAt  time.Time `json:"changedAt"`
	VerifiedAt time.Time `json:"verifiedAt,omitzero"`
}

// Waiting is a release waiting to enter a stage. Reason is one of the
// Wait words; Until, when set, is when the reason ends (soak over, a
// window opens); Approvals are those given.
type Waiting struct {
	Release   string    `json:"release"`
	Reason    string    `json:"reason"`
	Message   string    `json:"message"`
	Until     time.Time `json:"until,omitzero"`
	Approvals []string  `json:"approvals,omitempty"`
	Forced    bool      `json:"forced,omitempty"`
	// Approval is what the stage asks of the release's approvals, when it
	// requires some.
	Approval *WaitApproval `json:"approval,omitempty"`
}

// WaitApproval is what a stage's approval rule asks of one release:
// Required approvals of distinct tokens. Where the stage requires another
// approver, a verified author's own approval does not count, and a
// release whose author is not verified (an unsigned commit's claimed
// name) takes one more distinct token than the stage requires, whoever
// they are (any one of them may be its author).
type WaitApproval struct {
	Required       int    `json:"required"`
	Author         string `json:"author"`
	AuthorVerified bool   `json:"authorVerified"`
}

// Release is one release of a pipeline with its history: every stage
// state it went through, and the approvals it was given.
type Release struct {
	ID       string          `json:"id"`
	Seq      int64           `json:"seq"`
	Template string          `json:"template"`
	Params   json.RawMessage `json:"params"`
	Commit   string          `json:"commit"`
	Author   string          `json:"author"`
	// AuthorVerified: Author is a token's name or a trusted commit
	// signature's signer, not a name an unsigned commit claims.
	AuthorVerified bool      `json:"authorVerified"`
	Message        string    `json:"message"`
	CreatedAt      time.Time `json:"createdAt"`
	// Stages is the release's state in each stage it reached, by stage.
	Stages    map[string]StageRelease `json:"stages"`
	History   []ReleaseEvent          `json:"history"`
	Approvals []ReleaseApproval       `json:"approvals"`
}

// ReleaseEvent is one change of a release's state in a stage.
type ReleaseEvent struct {
	Stage   string    `json:"stage"`
	State   string    `json:"state"`
	Reason  string    `json:"reason,omitempty"`
	Message string    `json:"message,omitempty"`
	RunID   string    `json:"runId,omitempty"`
	Actor   string    `json:"actor,omitempty"`
	At      time.Time `json:"at"`
}

// RolledBackMessage is the message of a release's failed state in stage
// once rollout policy started run rollback after run failed (why): the
// state's RunID is then the rollback's (promotion.RolledBack).
func RolledBackMessage(stage, rollback, failed, why string) string {
	return fmt.Sprintf("%s rolls back (run %s) after run %s failed: %s", stage, rollback, failed, why)
}

// RolledBack reports whether e's run is the rollback that followed the
// release's failure in the stage, not the run that failed: its own
// status (often succeeded) is not the release's.
func (e ReleaseEvent) RolledBack() bool {
	return e.State == string(words.StageFailed) && e.RunID != "" &&
		strings.HasPrefix(e.Message, e.Stage+" rolls back (run "+e.RunID+") after run ")
}

// ReleaseApproval is a person's approval of a release entering a stage.
type ReleaseApproval struct {
	Stage  string    `json:"stage"`
	Actor  string    `json:"actor"`
	Reason string    `json:"reason,omitempty"`
	At     time.Time `json:"at"`
}

// Gates says the stage's gates, " · " between them: its soak, its
// approvals and its windows ("": none). The dashboard's cards and knit
// pipeline status say them alike.
func (s Stage) Gates() string {
	var gates []string
	if s.Soak != "" {
		gates = append(gates, "soak "+s.Soak)
	}
	if s.Approvals > 0 {
		g := fmt.Sprintf("%d approval", s.Approvals)
		if s.Approvals > 1 {
			g += "s"
		}
		if s.RequireOtherApprover {
			g += " by another than the author"
		}
		gates = append(gates, g)
	}
	return strings.Join(append(gates, s.Windows...), " · ")
}
