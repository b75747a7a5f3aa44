package knit

import (
	"context"

	"knit.dev/knit/internal/engine"
	"knit.dev/knit/internal/runner"
	"knit.dev/knit/internal/spec"
	"knit.dev/knit/internal/store"
)

// RunRequest asks for one run.
type RunRequest struct {
	// Kind is engine.KindPlan, KindApply, KindDrift, KindTeardown or
	// KindRollback (of EnvRef, to revision To or its last good one).
	Kind store.RunKind
	// To is, for a rollback, the revision to go back to (0: the newest
	// good one before the applied revision).
	To int
	// Resumes is the interrupted run this one resumes (ResumeRequest). A
	// rollback resuming a rollback goes to To, the revision that run
	// recorded, as it is: that run judged the target when it started.
	Resumes string
	// Env is the environment to run, as loaded from a file or a commit.
	// When nil, EnvRef names a known environment (team/env or its
	// metadata name) and the run uses its applied revision.
	Env    *spec.Environment
	EnvRef string
	// Components limits the run (and what they need); empty means all.
	Components []string
	// Parallelism defaults to the Config's.
	Parallelism int
	AutoApprove bool
	Refresh     bool
	// Reconcile, for a drift run, brings drifted components back, as
	// Policies say per component (spec.DriftReconcile, DriftApprove,
	// DriftAlert; a component not named follows its autoApprove).
	Reconcile bool
	Policies  map[string]string
	// Actor, Reason and Source are recorded with the run and in the audit trail.
	Actor  string
	Reason string
	Source string
	// Confirm asks a person about one component's plan (a terminal "yes").
	Confirm func(component string, p *runner.Plan) bool
	// OnEvent sees every event of the run, in order; a panic in it fails the run.
	OnEvent func(engine.Event)
	// Origin says where Env came from (a file path, URL@commit:path) and
	// Root the folder its relative paths resolve against (a git checkout);
	// Commit, Author and Message describe a git commit. All are kept with
	// the revision an apply records.
	Origin, Root            string
	Commit, Author, Message string
	// RunID, when set, is the ID the run gets (a server hands it out
	// before the run leaves its queue); it must be unique.
	RunID string
	// PolicyDirs are folders of Rego policies that judge the run's plan,
	// beside the Config's; OverridePolicy is why an admin lets a denied
	// run go on (audited).
	PolicyDirs     []string
	OverridePolicy string
	// Tree is the git commit's tree Env was read from (GitOps, a
	// pipeline): its policies/ folder judges the run too, unless the
	// repository's recorded policy set does (see RepoPolicySettings).
	Tree string
	// Caller is who asked for the run, when a person's token did (the API,
	// the dashboard): checked again when the run leaves its queue.
	Caller *Caller `json:",omitempty"`
}

// Lookup finds a running or recently finished run of this process by ID.
func (k *Knit) Lookup(id string) (*engine.Run, bool) { return k.engine.Lookup(id) }

// Cancel interrupts a run of this process by ID.
func (k *Knit) Cancel(id string) error { return k.engine.Cancel(id) }

// ChangeSets lists an environment's change sets ("" = every environment
// the caller sees), newest first, with a status among statuses (none:
// any), at most n (<= 0: all).
func (k *Knit) ChangeSets(ctx context.Context, ref string, n int, statuses ...string) ([]store.ChangeSet, error) {
	f := store.ChangeSetFilter{Statuses: statuses, Teams: callerTeams(ctx), Limit: n}
	if ref != "" {
		e, err := k.ResolveEnv(ctx, ref)
		if err != nil {
			return nil, err
		}
		f.Env = e.ID
	}
	return k.store.ListChangeSets(ctx, f)
}
