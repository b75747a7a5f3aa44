package riverqueue

import (
	"encoding/json"
	"fmt"

	"github.com/riverqueue/river"

	"knit.dev/knit/internal/knit"
	"knit.dev/knit/internal/spec"
	"knit.dev/knit/internal/store"
)

// jobKind is the kind of knit's run jobs in River's table.
const jobKind = "knit_run"

// runArgs is one run as a River job: everything of a knit.RunRequest a
// server's run carries (no callbacks), the environment as its revision
// JSON. A job is unique by its run ID: inserting it twice queues it once.
type runArgs struct {
	RunID string `json:"run_id" river:"unique"`
	Env   string `json:"env"`
	// Resumes is the run this one resumes (a replica running it died or
	// shut down).
	Resumes string `json:"resumes,omitempty"`

	RunKind     store.RunKind     `json:"kind"`
	To          int               `json:"to,omitempty"`
	EnvRef      string            `json:"env_ref,omitempty"`
	Spec        json.RawMessage   `json:"spec,omitempty"`
	File        string            `json:"file,omitempty"`
	Dir         string            `json:"dir,omitempty"`
	Components  []string          `json:"components,omitempty"`
	Parallelism int               `json:"parallelism,omitempty"`
	AutoApprove bool              `json:"auto_approve,omitempty"`
	Refresh     bool              `json:"refresh,omitempty"`
	Reconcile   bool              `json:"reconcile,omitempty"`
	Policies    map[string]string `json:"policies,omitempty"`
	Actor       string            `json:"actor,omitempty"`
	Reason      string            `json:"reason,omitempty"`
	Source      string            `json:"source,omitempty"`
	Origin      string            `json:"origin,omitempty"`
	Root        string            `json:"root,omitempty"`
	Commit      string            `json:"commit,omitempty"`
	Author      string            `json:"author,omitempty"`
	Message     string            `json:"message,omitempty"`
	PolicyDirs  []string          `json:"policy_dirs,omitempty"`
	Override    string            `json:"override_policy,omitempty"`
	Tree        string            `json:"tree,omitempty"`
	// Caller is who asked for the run: the door checks it again when the
	// job starts.
	Caller *knit.Caller `json:"caller,omitempty"`
}

// Kind is River's name for the job's worker.
func (runArgs) Kind() string { return jobKind }

// InsertOpts: unique by run ID in every state, so a resume the leader
// asks for twice is queued once.
func (runArgs) InsertOpts() river.InsertOpts {
	return river.InsertOpts{UniqueOpts: river.UniqueOpts{ByArgs: true}, MaxAttempts: 25}
}

// argsOf is req as a job. A request that cannot cross processes (a
// terminal's Confirm, an OnEvent) is refused.
func argsOf(req knit.RunRequest, env string) (runArgs, error) {
	if req.Confirm != nil || req.OnEvent != nil {
		return runArgs{}, fmt.Errorf("run queue: a run with callbacks cannot be queued in the database")
	}
	a := runArgs{RunID: req.RunID, Env: env, Resumes: req.Resumes, RunKind: req.Kind, To: req.To, EnvRef: req.EnvRef, Components: req.Components,
		Parallelism: req.Parallelism, AutoApprove: req.AutoApprove, Refresh: req.Refresh, Reconcile: req.Reconcile,
		Policies: req.Policies, Actor: req.Actor, Reason: req.Reason, Source: req.Source, Origin: req.Origin,
		Root: req.Root, Commit: req.Commit, Author: req.Author, Message: req.Message, PolicyDirs: req.PolicyDirs,
		Override: req.OverridePolicy, Tree: req.Tree, Caller: req.Caller}
	if req.Env != nil {
		body, err := json.Marshal(req.Env)
		if err != nil {
			return a, fmt.Errorf("run queue: encode %s: %w", env, err)
		}
		a.Spec, a.File, a.Dir = body, req.Env.File, req.Env.Dir
	}
	return a, nil
}

// request is the job as a run request again (its spec rebuilt as a
// revision is: paths resolve from the same folder, which every replica
// must reach).
func (a runArgs) request() (knit.RunRequest, error) {
	req := knit.RunRequest{RunID: a.RunID, Resumes: a.Resumes, Kind: a.RunKind, To: a.To, EnvRef: a.EnvRef, Components: a.Components,
		Parallelism: a.Parallelism, AutoApprove: a.AutoApprove, Refresh: a.Refresh, Reconcile: a.Reconcile,
		Policies: a.Policies, Actor: a.Actor, Reason: a.Reason, Source: a.Source, Origin: a.Origin, Root: a.Root,
		Commit: a.Commit, Author: a.Author, Message: a.Message, PolicyDirs: a.PolicyDirs,
		OverridePolicy: a.Override, Tree: a.Tree, Caller: a.Caller}
	if len(a.Spec) > 0 {
		env, err := spec.FromJSON(a.Spec, a.File, a.Dir)
		if err != nil {
			return req, fmt.Errorf("run %s: %w", a.RunID, err)
		}
		req.Env = env
	}
	return req, nil
}
