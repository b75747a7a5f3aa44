package store

import "time"

// EnvironmentFilter selects environments by team and status, with IDs
// after After, at most Limit (<= 0: all).
type EnvironmentFilter struct {
	Team   string
	Status EnvStatus
	// Teams, when set, keeps only environments of these teams: a caller's
	// teams, applied before the page is cut so every full page is full.
	Teams []string
	After string
	Limit int
}

// RunFilter selects runs older than the run Before (a run ID; "" = from the
// newest), at most Limit (<= 0: all).
type RunFilter struct {
	Before string
	Limit  int
	// Status and Kind, when set, keep only runs with that status or kind.
	Status RunStatus
	Kind   RunKind
	// Teams, when set, keeps only runs of these teams' environments.
	Teams []string
}

// RevisionFilter selects revisions numbered below Before (0 = from the
// latest), at most Limit (<= 0: all).
type RevisionFilter struct {
	Before int
	Limit  int
}

// AuditFilter selects audit events by environment and actor, at or after
// Since and before Until (zero: unbounded), with IDs after After, at most
// Limit (<= 0: all).
type AuditFilter struct {
	Env, Actor string
	// Teams, when set, keeps only events of these teams' environments
	// (events of no environment are left out).
	Teams        []string
	Since, Until time.Time
	After        int64
	Limit        int
}

// Store is knit's persistence. All methods are safe for concurrent use.
//
// The store has a clock of its own, and it alone judges lock leases: when a
// lease was acquired, when it expires, and so whether it may be taken over.
// Writers' clocks may disagree; the store's is the one every writer shares.
// It also stamps times left zero: a revision's CreatedAt, a run's
// StartedAt, an audit event's Time, an approval's CreatedAt and decision
// time, and an environment's UpdatedAt.
//
// Writes of a run are fenced by its environment's lock: see
// StartComponentRun and FinishRun.
