package engine

import (
	"knit.dev/knit/internal/progress"
	"knit.dev/knit/internal/store"
)

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

// Environment statuses: the engine's names for the store's
// (store.EnvStatus). These words, and the component Status words above,
// are the one vocabulary of the CLI, the API and the dashboard. An applied
// environment keeps its first machine word, "provisioned", so API clients
// and filters keep working; EnvLabel renders it "applied", the word its
// components use, wherever people read it.
const (
	EnvApplied     = store.EnvApplied
	EnvFailed      = store.EnvFailed
	EnvAwaiting    = store.EnvAwaiting
	EnvInterrupted = store.EnvInterrupted
	EnvDrifted     = store.EnvDrifted
	EnvTornDown    = store.EnvTornDown
)

// EnvLabel is an environment status as the CLI and the dashboard show it:
// the machine word itself, but "applied" for EnvApplied and "new" for an
// environment no run has finished.
func EnvLabel(status store.EnvStatus) string {
	switch status {
	case EnvApplied:
		return "applied"
	case store.EnvNew:
		return "new"
	}
	return string(status)
}

// EnvStatusOf is the stored status a person's word names, for filters:
// "applied" (EnvLabel's word) is EnvApplied; any other word is itself.
func EnvStatusOf(word string) store.EnvStatus {
	if word == "applied" {
		return EnvApplied
	}
	return store.EnvStatus(word)
}
