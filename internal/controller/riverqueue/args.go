package riverqueue

import (
	"encoding/json"
	"fmt"

	"github.com/riverqueue/river"

	"knit.dev/knit/internal/knit"
	"knit.dev/knit/internal/spec"
)

// jobKind is the kind of knit's run jobs in River's table.
const jobKind = "knit_run"

// runArgs is one run as a River job: the knit.RunRequest itself, as its
// JSON (every field a server's run carries; no callbacks), with the
// environment as its revision JSON beside it. A job is unique by its run
// ID: inserting it twice queues it once. (RunID, the request's own, is
// repeated here only for River's unique tag: the shallower field is the
// one JSON writes.)
type runArgs struct {
	RunID string          `json:"run_id" river:"unique"`
	Env   string          `json:"env"`
	Spec  json.RawMessage `json:"spec,omitempty"`
	File  string          `json:"file,omitempty"`
	Dir   string          `json:"dir,omitempty"`
	knit.RunRequest
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
	a := runArgs{RunID: req.RunID, Env: env, RunRequest: req}
	a.RunRequest.Env = nil
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
	req := a.RunRequest
	req.RunID = a.RunID
	if len(a.Spec) > 0 {
		env, err := spec.FromJSON(a.Spec, a.File, a.Dir)
		if err != nil {
			return req, fmt.Errorf("run %s: %w", a.RunID, err)
		}
		req.Env = env
	}
	return req, nil
}
