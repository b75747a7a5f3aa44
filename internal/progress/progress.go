// Package progress is what a run reports as it goes: each component's
// Status, in an order of severity, and the Events a run publishes for
// progress displays, server-sent events and notifications. It is a leaf
// (the store's port at most), so the HTTP client decodes events without
// linking the engine or the environment file's parser; the engine names
// these types by alias.
package progress

import (
	"fmt"
	"strings"
	"time"

	"knit.dev/knit/internal/words"
)

// Status is where one component stands in a run (words.ComponentStatus:
// ordered by severity, IsTerminal, IsError).
type Status = words.ComponentStatus

// Component statuses (words.Component*).
const (
	Pending    = words.ComponentPending
	Planning   = words.ComponentPlanning
	Applying   = words.ComponentApplying
	Destroying = words.ComponentDestroying

	UpToDate  = words.ComponentUpToDate
	NoChanges = words.ComponentNoChanges
	Planned   = words.ComponentPlanned
	Deferred  = words.ComponentDeferred

	Checking   = words.ComponentChecking
	InSync     = words.ComponentInSync
	Drifted    = words.ComponentDrifted
	Affected   = words.ComponentAffected
	Unknown    = words.ComponentUnknown
	NotApplied = words.ComponentNotApplied
	Applied    = words.ComponentApplied
	Destroyed  = words.ComponentDestroyed
	Awaiting   = words.ComponentAwaiting
	Waiting    = words.ComponentWaiting
	Skipped    = words.ComponentSkipped
	Refused    = words.ComponentRefused
	Failed     = words.ComponentFailed
	Canceled   = words.ComponentCanceled
)

// Worse returns the more severe of a and b.
func Worse(a, b Status) Status { return words.WorseStatus(a, b) }

// EventKind says what an Event reports (words.EventKind).
type EventKind = words.EventKind

// Event kinds (words.Event*).
const (
	// RunStarted is always a run's first event, RunFinished its last.
	RunStarted  = words.EventRunStarted
	RunFinished = words.EventRunFinished
	// ComponentStatus is a component moving to a new status.
	ComponentStatus = words.EventComponent
	// LogLine is one line of a tool's output, secrets masked.
	LogLine = words.EventLog
	// Verifying: an apply's components are applied and its health checks
	// run; HealthChecked is one check's verdict (Component, Code: verdict
	// and check, Reason: what it saw; Cause when not Successful).
	Verifying     = words.EventVerifying
	HealthChecked = words.EventHealth
	// PolicyDecision is one decision of the environment's policies about
	// the run's plan (Decision), before anything applies.
	PolicyDecision = words.EventPolicy
	// Dropped tells a subscriber that events it had not read yet fell out
	// of the run's live buffer (Missed counts them); the next events follow.
	Dropped = words.EventDropped
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
	RunKind   words.RunKind `json:"runKind,omitempty"`
	Component string        `json:"component,omitempty"`
	Status    Status        `json:"status,omitempty"`
	// Code ("waiting: upstream db awaiting approval") and Reason say why
	// for people; Cause says it for machines (a component event's).
	Code   string `json:"code,omitempty"`
	Reason string `json:"reason,omitempty"`
	words.Cause
	Plan    *PlanCounts   `json:"plan,omitempty"`
	Elapsed time.Duration `json:"elapsedNs,omitempty"`
	// Line is a LogLine's text (masked).
	Line string `json:"line,omitempty"`
	// RunStatus and Error close the run (RunFinished).
	RunStatus words.RunStatus `json:"runStatus,omitempty"`
	Error     string          `json:"error,omitempty"`
	// Missed is how many events a Dropped marker stands for.
	Missed int64 `json:"missed,omitempty"`
	// Decision is a PolicyDecision's.
	Decision *Decision `json:"decision,omitempty"`
}

// Decision is one message of one policy rule.
type Decision struct {
	Kind    string `json:"kind"`
	Message string `json:"message"`
	// File and Line are where the rule is written; Rule is its name.
	File      string `json:"file"`
	Line      int    `json:"line,omitempty"`
	Rule      string `json:"rule"`
	Component string `json:"component,omitempty"`
	Resource  string `json:"resource,omitempty"`
}

// String is "file:line rule: message (component, resource)".
func (d Decision) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s:%d %s: %s", d.File, d.Line, d.Rule, d.Message)
	if d.Component != "" {
		b.WriteString(" (component " + d.Component)
		if d.Resource != "" {
			b.WriteString(", resource " + d.Resource)
		}
		b.WriteString(")")
	}
	return b.String()
}
