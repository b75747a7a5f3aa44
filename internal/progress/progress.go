// Package progress is what a run reports as it goes: each component's
// Status, in an order of severity, and the Events a run publishes for
// progress displays, server-sent events and notifications. It is a leaf
// (the store's port at most), so the HTTP client decodes events without
// linking the engine or the environment file's parser; the engine names
// these types by alias.
package progress

import (
	"time"

	"knit.dev/knit/internal/store"
)

// Status is where one component stands in a run. Statuses are ordered by
// severity so a run's components roll up into one environment status.
type Status string

// Component statuses.
const (
	Pending    Status = "pending"
	Planning   Status = "planning"
	Applying   Status = "applying"
	Destroying Status = "destroying"

	UpToDate  Status = "up to date"        // fingerprint unchanged: the tool was not run
	NoChanges Status = "no changes"        // planned, nothing to do
	Planned   Status = "planned"           // plan has changes (plan runs only)
	Deferred  Status = "known after apply" // inputs come from components not yet applied

	Checking   Status = "checking"
	InSync     Status = "in sync"
	Drifted    Status = "drifted"
	Affected   Status = "affected by upstream drift"
	Unknown    Status = "unknown" // drift: the tool cannot compare with reality (a script without plan)
	NotApplied Status = "not applied"
	Applied    Status = "applied"
	Destroyed  Status = "destroyed"
	Awaiting   Status = "awaiting-approval"
	Waiting    Status = "waiting" // an upstream component awaits approval
	Skipped    Status = "skipped" // an upstream component failed
	Refused    Status = "refused" // destroyProtection, or a live dependent
	Failed     Status = "failed"
	Canceled   Status = "interrupted"
)

// IsTerminal reports whether the component is done for this run.
func (s Status) IsTerminal() bool {
	switch s {
	case Pending, Planning, Applying, Destroying:
		return false
	}
	return true
}

// IsError reports whether the status makes the run fail.
func (s Status) IsError() bool {
	return s == Failed || s == Refused || s == Skipped || s == Canceled
}

var severity = map[Status]int{
	UpToDate: 0, NoChanges: 0, Applied: 0, Destroyed: 0, InSync: 0, NotApplied: 0, Unknown: 0,
	Planned: 1, Deferred: 1, Drifted: 1, Affected: 1,
	Pending: 2, Planning: 2, Applying: 2, Destroying: 2, Checking: 2,
	Waiting: 3, Awaiting: 4, Skipped: 5, Refused: 6, Canceled: 7, Failed: 8,
}

// Worse returns the more severe of a and b.
func Worse(a, b Status) Status {
	if severity[b] > severity[a] {
		return b
	}
	return a
}

// EventKind says what an Event reports.
type EventKind string

// Event kinds.
const (
	// RunStarted is always a run's first event, RunFinished its last.
	RunStarted  EventKind = "run-started"
	RunFinished EventKind = "run-finished"
	// ComponentStatus is a component moving to a new status.
	ComponentStatus EventKind = "component"
	// LogLine is one line of a tool's output, secrets masked.
	LogLine EventKind = "log"
	// Verifying: an apply's components are applied and its health checks
	// run; HealthChecked is one check's verdict (Component, Code: verdict
	// and check, Reason: what it saw; Cause when not Successful).
	Verifying     EventKind = "verifying"
	HealthChecked EventKind = "health"
	// Dropped tells a subscriber that events it had not read yet fell out
	// of the run's live buffer (Missed counts them); the next events follow.
	Dropped EventKind = "dropped"
)

// PlanCounts is the size of a component's plan.
type PlanCounts struct {
	Add     int `json:"add"`
	Change  int `json:"change"`
	Destroy int `json:"destroy"`
}

// Event is one thing that happened in a run, for progress displays,
// server-sent events and notifications. Seq numbers a run's events from 1
// without gaps, so a reader can resume after the last one it saw.
type Event struct {
	Seq   int64     `json:"seq"`
	Kind  EventKind `json:"kind"`
	Time  time.Time `json:"time"`
	Env   string    `json:"env"`
	RunID string    `json:"runId"`
	// RunKind is the run's kind (plan, apply, drift, teardown).
	RunKind   store.RunKind `json:"runKind,omitempty"`
	Component string        `json:"component,omitempty"`
	Status    Status        `json:"status,omitempty"`
	// Code ("waiting: upstream db awaiting approval") and Reason say why
	// for people; Cause says it for machines (a component event's).
	Code   string `json:"code,omitempty"`
	Reason string `json:"reason,omitempty"`
	store.Cause
	Plan    *PlanCounts   `json:"plan,omitempty"`
	Elapsed time.Duration `json:"elapsedNs,omitempty"`
	// Line is a LogLine's text (masked).
	Line string `json:"line,omitempty"`
	// RunStatus and Error close the run (RunFinished).
	RunStatus store.RunStatus `json:"runStatus,omitempty"`
	Error     string          `json:"error,omitempty"`
	// Missed is how many events a Dropped marker stands for.
	Missed int64 `json:"missed,omitempty"`
}
