package knit

import (
	"knit.dev/knit/internal/engine"
	"knit.dev/knit/internal/runner"
	"knit.dev/knit/internal/spec"
	"knit.dev/knit/internal/store"
)

// RunRequest asks for one run. It is the one shape of a run's request:
// every door builds one (the API, the dashboard, the CLI, GitOps, the
// schedules, a promotion, the Kubernetes controller), both run queues
// carry it as it is (the in-process queue as the value, River's jobs as
// its JSON, with Env as its revision JSON beside it), and the Run action
// hands the engine its options (options). A field added here crosses
// every queue with no other change (TestRunRequestCrossesTheQueue in
// both queues); Env, Confirm and OnEvent are not serialised (JSON "-"):
// a queue carries Env itself, and a request with a callback cannot be
// queued in the database.
type RunRequest struct {
	// Kind is engine.KindPlan, KindApply, KindDrift, KindTeardown or
	// KindRollback (of EnvRef, to revision To or its last good one).
	Kind store.RunKind `json:"kind"`
	// To is, for a rollback, the revision to go back to (0: the newest
	// good one before the applied revision).
	To int `json:"to,omitempty"`
	// Resumes is the interrupted run this one resumes (ResumeRequest). A
	// rollback resuming a rollback goes to To, the revision that run
	// recorded, as it is: that run judged the target when it started.
	Resumes string `json:"resumes,omitempty"`
	// Env is the environment to run, as loaded from a file or a commit.
	// When nil, EnvRef names a known environment (team/env or its
	// metadata name) and the run uses its applied revision.
	Env    *spec.Environment `json:"-"`
	EnvRef string            `json:"env_ref,omitempty"`
	// Components limits the run (and what they need); empty means all.
	Components []string `json:"components,omitempty"`
	// Parallelism defaults to the Config's.
	Parallelism int  `json:"parallelism,omitempty"`
	AutoApprove bool `json:"auto_approve,omitempty"`
	Refresh     bool `json:"refresh,omitempty"`
	// Reconcile, for a drift run, brings drifted components back, as
	// Policies say per component (spec.DriftReconcile, DriftApprove,
	// DriftAlert; a component not named follows its autoApprove).
	Reconcile bool              `json:"reconcile,omitempty"`
	Policies  map[string]string `json:"policies,omitempty"`
	// Actor, Reason and Source are recorded with the run and in the audit trail.
	Actor  string `json:"actor,omitempty"`
	Reason string `json:"reason,omitempty"`
	Source string `json:"source,omitempty"`
	// Confirm asks a person about one component's plan (a terminal "yes").
	Confirm func(component string, p *runner.Plan) bool `json:"-"`
	// OnEvent sees every event of the run, in order; a panic in it fails the run.
	OnEvent func(engine.Event) `json:"-"`
	// Origin says where Env came from (a file path, URL@commit:path) and
	// Root the folder its relative paths resolve against (a git checkout);
	// Commit, Author and Message describe a git commit. All are kept with
	// the revision an apply records.
	Origin  string `json:"origin,omitempty"`
	Root    string `json:"root,omitempty"`
	Commit  string `json:"commit,omitempty"`
	Author  string `json:"author,omitempty"`
	Message string `json:"message,omitempty"`
	// RunID, when set, is the ID the run gets (a server hands it out
	// before the run leaves its queue); it must be unique.
	RunID string `json:"run_id,omitempty"`
	// PolicyDirs are folders of Rego policies that judge the run's plan,
	// beside the Config's; OverridePolicy is why an admin lets a denied
	// run go on (audited).
	PolicyDirs     []string `json:"policy_dirs,omitempty"`
	OverridePolicy string   `json:"override_policy,omitempty"`
	// Tree is the git commit's tree Env was read from (GitOps, a
	// pipeline): its policies/ folder judges the run too, unless the
	// repository's recorded policy set does (see RepoPolicySettings).
	Tree string `json:"tree,omitempty"`
	// Caller is who asked for the run, when a person's token did (the API,
	// the dashboard): checked again when the run leaves its queue.
	Caller *Caller `json:"caller,omitempty"`
	// Rollout, when set, makes the run a step of a rollout by the
	// environment's strategy (Env is that step's environment): Rollouts.Next
	// says what follows it.
	Rollout *RolloutStep `json:"rollout,omitempty"`
}

// options are the engine's options of req, judged by judge, parallelism par.
func (req RunRequest) options(judge engine.Judge, par int) engine.Options {
	return engine.Options{Judge: judge, OverridePolicy: req.OverridePolicy,
		Components: req.Components, Parallelism: par, AutoApprove: req.AutoApprove,
		Confirm: req.Confirm, Refresh: req.Refresh, Reconcile: req.Reconcile, Policies: req.Policies,
		Actor: req.Actor, Reason: req.Reason, Source: req.Source, OnEvent: req.OnEvent, RunID: req.RunID,
		Origin: req.Origin, Root: req.Root, Commit: req.Commit, Author: req.Author, Message: req.Message,
	}
}
