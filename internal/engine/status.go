package engine

import "knit.dev/knit/internal/progress"

// Status is where one component stands in a run (internal/progress).
type Status = progress.Status

// Component statuses.
const (
	Pending    = progress.Pending
	Planning   = progress.Planning
	Applying   = progress.Applying
	Destroying = progress.Destroying
	UpToDate   = progress.UpToDate
	NoChanges  = progress.NoChanges
	Planned    = progress.Planned
	Deferred   = progress.Deferred
	Checking   = progress.Checking
	InSync     = progress.InSync
	Drifted    = progress.Drifted
	Affected   = progress.Affected
	Unknown    = progress.Unknown
	NotApplied = progress.NotApplied
	Applied    = progress.Applied
	Destroyed  = progress.Destroyed
	Awaiting   = progress.Awaiting
	Waiting    = progress.Waiting
	Skipped    = progress.Skipped
	Refused    = progress.Refused
	Failed     = progress.Failed
	Canceled   = progress.Canceled
)

// Worse returns the more severe of a and b.
func Worse(a, b Status) Status { return progress.Worse(a, b) }

// Environment statuses: what an environment's last run left it as, in the
// store and the API. These words, and the component Status words above,
// are the one vocabulary of the CLI, the API and the dashboard. An applied
// environment keeps its first machine word, "provisioned", so API clients
// and filters keep working; EnvLabel renders it "applied", the word its
// components use, wherever people read it.
const (
	EnvApplied     = "provisioned"
	EnvFailed      = "failed"
	EnvAwaiting    = "awaiting-approval"
	EnvInterrupted = "interrupted"
	EnvDrifted     = "drifted"
	EnvTornDown    = "torn-down"
)

// EnvLabel is an environment status as the CLI and the dashboard show it:
// the machine word itself, but "applied" for EnvApplied and "new" for an
// environment no run has finished.
func EnvLabel(status string) string {
	switch status {
	case EnvApplied:
		return "applied"
	case "":
		return "new"
	}
	return status
}

// EnvStatusOf is the stored status a person's word names, for filters:
// "applied" (EnvLabel's word) is EnvApplied; any other word is itself.
func EnvStatusOf(word string) string {
	if word == "applied" {
		return EnvApplied
	}
	return word
}
