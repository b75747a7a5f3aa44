// Package view holds the read models and pages the library
// (internal/knit) answers and the HTTP client (internal/client) decodes. It
// is a leaf: importing it links neither the store's implementation nor the
// runners, so the client does not either.
package view

import (
	"time"

	"knit.dev/knit/internal/plan"
	"knit.dev/knit/internal/words"
)

// Page is one page of a list. Next is the cursor for the page after this
// one, empty at the end.
type Page[T any] struct {
	Items []T    `json:"items"`
	Next  string `json:"next,omitempty"`
}

// EnvironmentFilter selects environments: by team and status, after a
// cursor, at most Limit (default 50, at most 1000).
type EnvironmentFilter struct {
	Team, Status string
	After        string
	Limit        int
}

// EnvironmentSummary is one row of the environments list. Invalid is the
// newest revision when its file does not validate.
type EnvironmentSummary struct {
	Environment
	LastRun *Run             `json:"lastRun,omitempty"` // the newest run, nil when none
	Invalid *InvalidRevision `json:"invalid,omitempty"`
}

// EnvironmentListFilter selects one page of the dashboard's environments
// list: Filter's environments (Filter.After in ID order only) in Order
// (ByID, ByStatus or ByUpdated), the first Offset skipped, at most
// Filter.Limit (<= 0: all).
type EnvironmentListFilter struct {
	Filter EnvironmentFilter
	Order  EnvironmentOrder
	Offset int
}

// EnvironmentRow is one row of the environments list: an environment with
// its newest run and drift check, lock holder, components counted by
// status, applied revision's commit and invalid newest revision.
type EnvironmentRow struct {
	Environment
	LastRun       *Run
	Drift         *DriftView // nil: never checked
	LockHolder    string     // "": free
	Components    map[string]int
	AppliedCommit string
	Invalid       *InvalidRevision
}

// EnvironmentList is one page of the environments list and how many
// environments its filter selects in all.
type EnvironmentList struct {
	Rows  []EnvironmentRow
	Total int
}

// ComponentView is one component as knit last saw it.
type ComponentView struct {
	Name string `json:"name"`
	Type string `json:"type,omitempty"`
	// Status is the component's state (applied, failed, awaiting-approval,
	// drifted, destroyed) or "pending" when it was never run.
	Status string `json:"status"`
	// Code ("waiting: upstream db awaiting approval") and Reason say why,
	// as of its last run, for people; Cause says it for machines
	// (reasonCode, upstream, approvalId).
	Code   string `json:"code,omitempty"`
	Reason string `json:"reason,omitempty"`
	words.Cause
	DependsOn []string `json:"dependsOn,omitempty"`
	// DestroyProtection: a teardown refuses the component (and keeps what
	// it depends on).
	DestroyProtection bool `json:"destroyProtection,omitempty"`
	// Removed is set for a live component no longer in the applied file.
	Removed   bool       `json:"removed,omitempty"`
	Revision  int        `json:"revision,omitempty"`
	UpdatedAt time.Time  `json:"updatedAt,omitzero"`
	Outputs   int        `json:"outputs"`
	LastPlan  *plan.Plan `json:"lastPlan,omitempty"`
	LastRun   *RunRef    `json:"lastRun,omitempty"`
}

// RunRef is a component's last component run.
type RunRef struct {
	RunID      string    `json:"runId"`
	Operation  string    `json:"operation"`
	Status     string    `json:"status"`
	StartedAt  time.Time `json:"startedAt"`
	FinishedAt time.Time `json:"finishedAt,omitzero"`
}

// EnvironmentView is one environment with its components. Revision is the
// latest revision seen, AppliedRevision the one ENV means.
type EnvironmentView struct {
	Environment
	Lock       *Lock           `json:"lock,omitempty"`
	Components []ComponentView `json:"components"`
	LastRun    *Run            `json:"lastRun,omitempty"`
	LastDrift  *DriftView      `json:"lastDrift,omitempty"`
	// SucceededRevision, for an environment whose status is not applied
	// (failed, awaiting-approval, …), is the revision of its last apply
	// that succeeded (0: none did): AppliedRevision is the one it is
	// converging to, whatever became of that.
	SucceededRevision int `json:"succeededRevision,omitempty"`
	// Invalid is the newest revision when its file does not validate.
	Invalid *InvalidRevision `json:"invalid,omitempty"`
	// ExpiresAt is when an ephemeral environment (spec.ttl) is torn down.
	ExpiresAt time.Time `json:"expiresAt,omitzero"`
	// Health is the environment's last health check (after an apply, by
	// knit health, or on its schedule); nil when none ran.
	Health *Health `json:"health,omitempty"`
	// Consumers are the environments (TEAM/ENV) whose applied revisions
	// read outputs this one exports (spec.exports): what follows its
	// changes, and what must be torn down before it.
	Consumers []string `json:"consumers,omitempty"`
}

// Health is the outcome of one health check of an environment: the worst
// verdict, when, and each check's verdict with what it last saw. RunID
// is the apply it verified ("" for a check on demand or on schedule).
type Health struct {
	Verdict   string        `json:"verdict"`
	CheckedAt time.Time     `json:"checkedAt"`
	RunID     string        `json:"runId,omitempty"`
	Checks    []HealthCheck `json:"checks"`
}

// HealthCheck is one check's verdict: Component is "" for an
// environment-level check; Measured counts its measurements; Evidence is
// the last one's datum (status code, query value, exit code); Message why
// the verdict is what it is.
type HealthCheck struct {
	Component string `json:"component,omitempty"`
	Name      string `json:"name"`
	Verdict   string `json:"verdict"`
	Measured  int    `json:"measured"`
	Evidence  string `json:"evidence,omitempty"`
	Message   string `json:"message,omitempty"`
}

// DriftView is the outcome of an environment's latest drift check.
type DriftView struct {
	RunID     string          `json:"runId"`
	CheckedAt time.Time       `json:"checkedAt"`
	Status    words.RunStatus `json:"status"`
	Drifted   []string        `json:"drifted"`
	Affected  []string        `json:"affected,omitempty"`
	Failed    []string        `json:"failed,omitempty"`
	// Unknown: components whose tool cannot compare with reality (a
	// script without a plan command).
	Unknown []string `json:"unknown,omitempty"`
}

// OutputView is one output; a sensitive value is Masked unless revealed.
type OutputView struct {
	Value     any  `json:"value"`
	Sensitive bool `json:"sensitive,omitempty"`
}

// RunView is one run with what it did to each component.
type RunView struct {
	Run
	Components []ComponentRun `json:"components"`
}

// AuditFilter selects audit events: by environment (team/env or name),
// actor and time, after a cursor (an event ID), at most Limit.
type AuditFilter struct {
	Env, Actor   string
	Since, Until time.Time
	After        string
	Limit        int
}

// InvalidRevision is an environment's newest revision when its file does
// not validate (a commit that broke it, in GitOps): nothing of it runs, and
// the environment stays at its applied revision until a newer revision
// replaces it. Every view of the environment shows it, loudly.
type InvalidRevision struct {
	Env    string `json:"env"`
	Number int    `json:"number"`
	// File is the environment file's path (in the repository, in GitOps).
	File    string `json:"file"`
	Source  string `json:"source"`
	Commit  string `json:"commit,omitempty"`
	Author  string `json:"author,omitempty"`
	Message string `json:"message,omitempty"`
	// Errors are the file's diagnostics, each "file:line:col: field:
	// message" with its hint lines, in the file's order: all of them.
	Errors    []string  `json:"errors"`
	CreatedAt time.Time `json:"createdAt"`
}

// Expiry is an ephemeral environment's expiry, as knit ttl shows it.
type Expiry struct {
	Env       string    `json:"env"`
	ExpiresAt time.Time `json:"expiresAt"`
}
