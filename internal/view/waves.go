package view

import "time"

// A set's rollout in waves (WaveRollout.Status).
const (
	FleetRolling = "rolling" // a wave is being applied, or soaks
	FleetHalted  = "halted"  // more than maxFailed failed: nothing more starts until an operator resumes
	FleetDone    = "done"    // every wave verified or was skipped
	FleetAborted = "aborted" // an operator stopped it: the environments not reached keep their release
)

// Where one environment of a rollout stands (WaveEnv.State).
const (
	WaveEnvWaiting  = "waiting"  // its wave has not reached it: it keeps its release
	WaveEnvApplying = "applying" // a run applies the set's change to it
	WaveEnvVerified = "verified" // applied, and its health checks passed
	WaveEnvFailed   = "failed"   // the run failed (its own rollout.onFailure followed: rollback or pause)
	WaveEnvSkipped  = "skipped"  // an operator skipped its wave, or aborted the rollout: it keeps its release
)

// WaveRollout is an environment set's rollout in waves of one change of its
// template (the commit that made it): the waves, where each environment
// stands, and whether the rollout goes on. It is what the store keeps
// and what knit fleet status shows.
type WaveRollout struct {
	// Set is the set's team/name; File its file in the repository.
	Set    string `json:"set"`
	Team   string `json:"team"`
	File   string `json:"file"`
	Commit string `json:"commit"`
	Reason string `json:"reason,omitempty"`
	// Pipeline, Stage and Release are set for a pipeline's fleet stage:
	// its rollout of Release (Set is then TEAM/PIPELINE.STAGE).
	Pipeline string `json:"pipeline,omitempty"`
	Stage    string `json:"stage,omitempty"`
	Release  string `json:"release,omitempty"`
	Status   string `json:"status"`
	// Wave is the index of the wave being applied (len(Waves): all done).
	Wave  int       `json:"wave"`
	Waves []Wave    `json:"waves"`
	Envs  []WaveEnv `json:"envs"`
	// MaxFailed failures are tolerated (plus Tolerated, what operators'
	// resumes accepted); MaxParallel environments of a wave run at once;
	// Soak is how long a verified wave waits (a Go duration).
	MaxFailed   int    `json:"maxFailed"`
	Tolerated   int    `json:"tolerated,omitempty"`
	MaxParallel int    `json:"maxParallel"`
	Soak        string `json:"soak,omitempty"`
	// Replaced is the commit of the rollout this one superseded, if any.
	Replaced  string    `json:"replaced,omitempty"`
	StartedAt time.Time `json:"startedAt"`
	ChangedAt time.Time `json:"changedAt"`
	// Why says why the next wave waits (or why nothing moves); filled in
	// when read.
	Why string `json:"why,omitempty"`
}

// Wave is one wave: the step it comes from ("upgrade_testing=true",
// "25%"), its environments, why it is empty if it is, when its last
// environment verified, and whether an operator skipped it.
type Wave struct {
	Step       string    `json:"step"`
	IDs        []string  `json:"ids"`
	Note       string    `json:"note,omitempty"`
	VerifiedAt time.Time `json:"verifiedAt,omitzero"`
	Skipped    bool      `json:"skipped,omitempty"`
}

// WaveEnv is one environment of a rollout.
type WaveEnv struct {
	ID     string            `json:"id"`
	Labels map[string]string `json:"labels,omitempty"`
	Wave   int               `json:"wave"`
	State  string            `json:"state"`
	// Commit is the commit of the change it gets (an environment waiting
	// since an older change of the set gets that one).
	Commit    string    `json:"commit,omitempty"`
	RunID     string    `json:"runId,omitempty"`
	Message   string    `json:"message,omitempty"`
	ChangedAt time.Time `json:"changedAt,omitzero"`
}

// Failed counts the rollout's failed environments.
func (r *WaveRollout) Failed() int {
	n := 0
	for _, e := range r.Envs {
		if e.State == WaveEnvFailed {
			n++
		}
	}
	return n
}

// Env is the rollout's environment id (nil: not in it).
func (r *WaveRollout) Env(id string) *WaveEnv {
	for i := range r.Envs {
		if r.Envs[i].ID == id {
			return &r.Envs[i]
		}
	}
	return nil
}

// Fleet is knit fleet status: a set's environments with the release each
// runs (its applied revision and that revision's commit), its status,
// and its wave, beside the set's rollout (nil: the set has none yet).
type Fleet struct {
	Set     string       `json:"set"`
	Rollout *WaveRollout `json:"rollout,omitempty"`
	Envs    []FleetEnv   `json:"envs"`
}

// FleetEnv is one environment of a fleet.
type FleetEnv struct {
	ID     string            `json:"id"`
	Labels map[string]string `json:"labels,omitempty"`
	// Revision is the applied revision, Commit the commit it came from.
	Revision int    `json:"revision"`
	Commit   string `json:"commit,omitempty"`
	Status   string `json:"status"`
	// Verification is the applied revision's verification verdict.
	Verification string `json:"verification,omitempty"`
	Wave         int    `json:"wave"`
	State        string `json:"state,omitempty"`
	Message      string `json:"message,omitempty"`
}
