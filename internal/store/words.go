package store

import "knit.dev/knit/internal/words"

// The store's typed words, declared in internal/words (a run's status and
// kind, an environment's status) and named here as they always were. The
// API's OpenAPI document enumerates each closed set
// (server/TestEveryWordSetIsItsOpenAPIEnum keeps them equal).

// RunStatus is where a run stands (words.RunStatus).
type RunStatus = words.RunStatus

// Run statuses (words.Run*).
const (
	StatusQueued      = words.RunQueued
	StatusRefused     = words.RunRefused
	StatusRunning     = words.RunRunning
	StatusSucceeded   = words.RunSucceeded
	StatusFailed      = words.RunFailed
	StatusInterrupted = words.RunInterrupted
	StatusAwaiting    = words.RunAwaiting
	StatusVerifying   = words.RunVerifying
	StatusSuperseded  = words.RunSuperseded
	StatusWaiting     = words.RunWaiting
)

// RunStatuses is the closed set, in the order the OpenAPI document lists it.
func RunStatuses() []RunStatus { return words.RunStatuses() }

// RunKind is what a run does to its environment (words.RunKind).
type RunKind = words.RunKind

// Run kinds (words.Kind*).
const (
	KindPlan     = words.KindPlan
	KindApply    = words.KindApply
	KindDrift    = words.KindDrift
	KindTeardown = words.KindTeardown
	KindRollback = words.KindRollback
)

// RunKinds is the closed set, in the order the OpenAPI document lists it.
func RunKinds() []RunKind { return words.RunKinds() }

// EnvStatus is what an environment's last run left it as (words.EnvStatus).
type EnvStatus = words.EnvStatus

// Environment statuses (words.Env*).
const (
	EnvNew         = words.EnvNew
	EnvApplied     = words.EnvApplied
	EnvFailed      = words.EnvFailed
	EnvAwaiting    = words.EnvAwaiting
	EnvRejected    = words.EnvRejected
	EnvInterrupted = words.EnvInterrupted
	EnvDrifted     = words.EnvDrifted
	EnvTornDown    = words.EnvTornDown
	EnvPaused      = words.EnvPaused
	EnvWaiting     = words.EnvWaiting
)

// EnvStatuses is the closed set, in the order the OpenAPI document lists it.
func EnvStatuses() []EnvStatus { return words.EnvStatuses() }
