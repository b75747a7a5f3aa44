// Package engine orchestrates runs over an environment's dependency graph:
// plan, apply and teardown, with valueFrom resolution, fingerprints, locks
// and the approval gate. It talks to tools only through runner.Runner and to
// the database only through store.Store.
package engine

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"time"

	"knit.dev/knit/internal/dag"
	"knit.dev/knit/internal/health"
	"knit.dev/knit/internal/procexec"
	"knit.dev/knit/internal/runner"
	"knit.dev/knit/internal/spec"
	"knit.dev/knit/internal/store"
)

// ErrUnsupportedType is returned for a component type no runner handles yet.
var ErrUnsupportedType = errors.New("component type not supported yet")

// Engine runs environments. Its fields are set once, before the first run;
// after that it is safe for concurrent use: any number of runs on different
// environments at once (runs on one environment are serialised by its lock).
type Engine struct {
	Store store.Store
	// Runners by component type (spec.TypeTerraform, …).
	Runners map[string]runner.Runner
	// DataDir holds per-component work dirs under DataDir/work.
	DataDir string
	// Host and PID identify this engine's process in locks. An engine
	// without them never judges another holder dead: only an expired lease
	// frees an environment for it.
	Host string
	PID  int
	// LockLease is how long a lock lives without renewal (default 60s).
	LockLease time.Duration
	// EventRetention bounds the events a run keeps in memory for late
	// subscribers (zero fields: the defaults).
	EventRetention Retention
	// Now is the clock for records; injectable for tests. Lock expiry is
	// judged by the store's clock, never this one.
	Now func() time.Time
	// EnsureDir, when set, is called before a run reads an environment's
	// files from dir (its spec's Dir; a removed component's revision's), so
	// that files kept elsewhere can be written again (GitOps: a commit's
	// tree pruned from the cache). An error fails the run.
	EnsureDir func(ctx context.Context, dir string) error
	// ToolGrace is how long a tool a dead knit left running has between
	// SIGTERM and SIGKILL when a later run ends it (default procexec.Grace).
	ToolGrace time.Duration
	// Verifier runs health checks after an apply (default: health.Runner
	// on the real clock).
	Verifier Verifier
	// Watchdog, when set, stops a run's tools once its lease is no longer
	// known renewed, even while this process is stopped (procexec.Watchdog).
	Watchdog *procexec.Watchdog

	mu   sync.Mutex
	runs map[string]*Run // running, plus the most recent finished ones
	done []string        // finished run IDs, oldest first, for eviction
}

// Run kinds: the engine's names for the store's (store.RunKind).
const (
	KindPlan     = store.KindPlan
	KindApply    = store.KindApply
	KindDrift    = store.KindDrift
	KindTeardown = store.KindTeardown
	// KindRollback applies an earlier revision's spec after a rollout
	// failed: an apply (only what changed, in graph order) whose
	// re-applies go on without asking, and whose destroys of components
	// the earlier revision lacks are gated like any destroy.
	KindRollback = store.KindRollback
)

// Options are the knobs of one run.
type Options struct {
	// Components limits the run to these components and what they need
	// (teardown: and what needs them). Empty means all.
	Components  []string
	Parallelism int
	// AutoApprove applies plans of components whose autoApprove is false.
	AutoApprove bool
	// Confirm, when set, asks a person whether to apply a component's plan
	// (interactive "yes"); it is called from several goroutines one at a time.
	Confirm func(component string, p *runner.Plan) bool
	// Refresh plans even components whose fingerprint is unchanged.
	Refresh bool
	// Reconcile, in a drift run, brings drifted components back.
	Reconcile bool
	// Policies, in a drift run, say per component what drift leads to
	// (spec.DriftReconcile: applied at once; DriftApprove: waits for a
	// person; DriftAlert: only reported); a component not named follows
	// Reconcile and its autoApprove.
	Policies map[string]string
	// Root, when set, is the folder the spec's relative paths resolve
	// against (the file's folder in a git checkout), kept with the
	// revision; default the spec's Dir.
	Root string
	// Commit, Author and Message describe the git commit the spec comes
	// from, recorded with the revision.
	Commit, Author, Message string
	// Actor is who asked for the run (OS user, token name, commit author),
	// Reason why, and Source through what ("cli", "api", "git", "schedule").
	Actor  string
	Reason string
	Source string
	// Origin says where the spec came from (a file path, a git URL@commit)
	// for the revision; default the environment's file, made absolute.
	Origin string
	// Judge, when set, judges the run's whole plan before anything
	// applies (policy as code; see Judge). Nil: no policy.
	Judge Judge
	// OverridePolicy, when set, is why an admin lets a run a policy denies
	// go on: the denial is recorded, audited and shown, and the run goes
	// on. Who may set it is the caller's to check.
	OverridePolicy string
	// RunID, when set, is the run's ID (see NewRunID); otherwise a new one.
	RunID string
	// Preview, in a plan run, previews a branch (knit serve
	// --preview-branches): each component is planned in a copy of its
	// work dir (a saved plan waiting for approval stays as it is), no
	// approval is outdated, and a component whose fingerprint is the
	// applied one's is up to date, as an apply would find it. Each plan's
	// Digest and the run's Checksum are what the apply of the same change
	// shows.
	Preview bool
	// PreviewScripts, in a preview, runs the plan commands of script
	// components; without it they are not run (Deferred, "not planned").
	PreviewScripts bool
	// Sandbox, in a preview, confines the tools and commands of the
	// previewed code (runner.Component.Sandbox): each component is planned
	// in a copy of its work dir under Sandbox.Dir, its sensitive inputs
	// replaced by placeholders. Nil: the preview runs code as knit does.
	Sandbox *procexec.Sandbox
	// OnEvent, when set, sees every event of the run in order, from a
	// goroutine of its own. It is part of the run: if it panics, the run
	// fails with the panic's message.
	OnEvent func(Event)
}

// ComponentResult is the outcome of one component in a run.
type ComponentResult struct {
	Name   string `json:"name"`
	Status Status `json:"status"`
	// Code says why in short text ("waiting: upstream db awaiting
	// approval"), Reason says it at length, both for people; Cause says it
	// for machines (ReasonCode, Upstream, ApprovalID).
	Code   string `json:"code,omitempty"`
	Reason string `json:"reason,omitempty"`
	store.Cause
	Plan *runner.Plan `json:"plan,omitempty"`
	// Digest is the plan's checksum (PlanDigest), for a plan with changes
	// that a preview made or an apply applied.
	Digest string `json:"digest,omitempty"`
	// Placeholders name the sensitive inputs a sandboxed preview planned
	// with a placeholder instead of their value.
	Placeholders []string `json:"placeholders,omitempty"`
	// PlannedAhead names the inputs a preview planned with placeholders
	// because they are known only after an upstream component is applied
	// (its Digest is then an AheadDigest).
	PlannedAhead []string `json:"plannedAhead,omitempty"`
	// Drift is what a drift check found (in sync, drifted, affected), kept
	// when reconciliation then moves Status on.
	Drift Status `json:"drift,omitempty"`
	// AffectedBy lists the upstream outputs whose drift affects this component.
	AffectedBy []string       `json:"affectedBy,omitempty"`
	Log        string         `json:"-"`
	StartedAt  time.Time      `json:"startedAt,omitzero"`
	Elapsed    time.Duration  `json:"elapsedNs,omitempty"`
	Outputs    runner.Outputs `json:"-"`
}

// Result is the outcome of a run.
type Result struct {
	RunID      string             `json:"runId"`
	Env        string             `json:"env"`
	Kind       store.RunKind      `json:"kind"`
	Revision   int                `json:"revision"`
	Status     store.RunStatus    `json:"status"`
	Error      string             `json:"error,omitempty"`
	Components []*ComponentResult `json:"components"`
	// ChangeSet is the change a gated apply stopped at, to approve at once
	// (nil when nothing waits).
	ChangeSet *store.ChangeSet `json:"changeSet,omitempty"`
	// Verification is the health checks an apply ran once its components
	// were applied (nil when it ran none).
	Verification *health.Report `json:"verification,omitempty"`
	// Policy is what the environment's policies decided about the run's
	// plan (nil without policies).
	Policy *Verdict `json:"policy,omitempty"`
	// Checksum is the plan's checksum over its components' digests
	// (PlanChecksum), for a preview and an apply; Preview names the
	// preview whose checksum an apply applied.
	Checksum string      `json:"checksum,omitempty"`
	Preview  *PreviewRef `json:"preview,omitempty"`
	// Rollout is what follows a verification that did not succeed:
	// RolloutRollback asks the caller to start a rollback run
	// (RollbackReason says why); RolloutPaused left the environment paused.
	Rollout Rollout `json:"rollout,omitempty"`
	// Before is, for a drift check, the environment's status when it
	// started: what the check's result changed (drift found, resolved).
	Before store.EnvStatus `json:"before,omitempty"`
	// ExportsChanged are the exported outputs (COMPONENT.OUTPUT) whose
	// value the run changed: their consumers follow (knit.After).
	ExportsChanged []string `json:"exportsChanged,omitempty"`
}

// Failed reports whether any component ended in an error status.
func (r *Result) Failed() bool {
	for _, c := range r.Components {
		if c.Status.IsError() {
			return true
		}
	}
	return false
}

// Awaiting reports whether any component stopped at the approval gate.
func (r *Result) Awaiting() bool {
	for _, c := range r.Components {
		if c.Status == Awaiting {
			return true
		}
	}
	return false
}

// HasChanges reports whether any plan in the run has changes.
func (r *Result) HasChanges() bool {
	for _, c := range r.Components {
		if c.Plan.HasChanges() {
			return true
		}
	}
	return false
}

// HasDrift reports whether a drift check found any component out of sync.
func (r *Result) HasDrift() bool {
	for _, c := range r.Components {
		if c.Drift == Drifted || c.Drift == Affected {
			return true
		}
	}
	return false
}

// Component returns the named component's result, or nil.
func (r *Result) Component(name string) *ComponentResult {
	for _, c := range r.Components {
		if c.Name == name {
			return c
		}
	}
	return nil
}

// SortByGraph orders components as they depend on each other: by level in
// g, then by name.
func (r *Result) SortByGraph(g *dag.Graph) {
	level := map[string]int{}
	if levels, err := g.Levels(); err == nil {
		for i, l := range levels {
			for _, n := range l {
				level[n] = i
			}
		}
	}
	sort.Slice(r.Components, func(i, j int) bool {
		a, b := r.Components[i], r.Components[j]
		if level[a.Name] != level[b.Name] {
			return level[a.Name] < level[b.Name]
		}
		return a.Name < b.Name
	})
}

func (e *Engine) now() time.Time {
	if e.Now != nil {
		return e.Now()
	}
	return time.Now()
}

func (e *Engine) runnerFor(c *spec.Component) (runner.Runner, error) {
	r, ok := e.Runners[c.Type]
	if !ok {
		return nil, fmt.Errorf("%s: %w: %s (knit applies terraform components today)", c.Name, ErrUnsupportedType, c.Type)
	}
	return r, nil
}

// workDir is a component's persistent folder: DataDir/work/TEAM/ENV/COMPONENT.
func (e *Engine) workDir(env *spec.Environment, c *spec.Component) string {
	return filepath.Join(e.DataDir, "work", env.Spec.TeamName, env.Spec.EnvName, c.Name)
}

// component builds what a runner needs for c. def is the environment c's
// definition belongs to (an older revision, for a component removed from
// the file), whose folder its relative paths resolve against. run is the
// run, holding env's lock, the runner works for.
func (e *Engine) component(env, def *spec.Environment, c *spec.Component, run string, log *stepLog) (runner.Component, error) {
	dir := e.workDir(env, c)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return runner.Component{}, err
	}
	return runner.Component{Env: env.ID(), Spec: def, Def: c, Run: run, WorkDir: dir, Log: log}, nil
}

// ensureDir is EnsureDir for an environment's files in dir.
func (e *Engine) ensureDir(ctx context.Context, dir string) error {
	if e.EnsureDir == nil || dir == "" {
		return nil
	}
	if err := e.EnsureDir(ctx, dir); err != nil {
		return fmt.Errorf("the environment's files in %s: %w", dir, err)
	}
	return nil
}
