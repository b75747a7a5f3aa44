package words

// RunStatus is where a run stands: running, then one final status.
type RunStatus string

// Run statuses.
const (
	// RunQueued and RunRefused are the server's, never recorded: a run
	// waiting in its queue, and one the queue could not start.
	RunQueued  RunStatus = "queued"
	RunRefused RunStatus = "refused"
	// RunRunning is a run in progress (and, in the store, a component
	// run not yet ended: ComponentRunning is the same word).
	RunRunning     RunStatus = "running"
	RunSucceeded   RunStatus = "succeeded"
	RunFailed      RunStatus = "failed"
	RunInterrupted RunStatus = "interrupted"
	RunAwaiting    RunStatus = "awaiting-approval"
	// RunVerifying is an apply checking health once its components are
	// applied: a live run's status; its record says running until the
	// outcome.
	RunVerifying RunStatus = "verifying"
	// RunSuperseded is a run that stopped at the approval gate and was
	// replaced by a later run of its environment.
	RunSuperseded RunStatus = "superseded"
	// RunWaiting is a run that stopped because an input reads another
	// environment's output not there yet (ReasonUpstreamEnvironmentNotReady):
	// a wait, not a failure; the producer's apply starts it again.
	RunWaiting RunStatus = "waiting"
)

// RunStatuses is the closed set, in the order the OpenAPI document lists it.
func RunStatuses() []RunStatus {
	return []RunStatus{RunQueued, RunRefused, RunRunning, RunSucceeded, RunFailed, RunInterrupted, RunAwaiting, RunVerifying, RunSuperseded, RunWaiting}
}

// RunKind is what a run does to its environment.
type RunKind string

// Run kinds.
const (
	KindPlan     RunKind = "plan"
	KindApply    RunKind = "apply"
	KindDrift    RunKind = "drift"
	KindTeardown RunKind = "teardown"
	// KindRollback re-applies the last revision whose verification
	// succeeded, after a rollout failed (or when a person asks).
	KindRollback RunKind = "rollback"
)

// RunKinds is the closed set, in the order the OpenAPI document lists it.
func RunKinds() []RunKind {
	return []RunKind{KindPlan, KindApply, KindDrift, KindTeardown, KindRollback}
}

// EnvStatus is what an environment's last run left it as. An applied
// environment keeps its first machine word, "provisioned", so API clients
// and filters keep working; people read it as "applied" (EnvLabel in
// internal/engine). An environment no run has finished has none ("").
type EnvStatus string

// Environment statuses.
const (
	EnvNew         EnvStatus = "" // no run has finished
	EnvApplied     EnvStatus = "provisioned"
	EnvFailed      EnvStatus = "failed"
	EnvAwaiting    EnvStatus = "awaiting-approval"
	EnvRejected    EnvStatus = "rejected" // a person rejected the plan that awaited approval
	EnvInterrupted EnvStatus = "interrupted"
	EnvDrifted     EnvStatus = "drifted"
	EnvTornDown    EnvStatus = "torn-down"
	// EnvPaused: an apply's verification did not succeed and the rollout
	// waits for a person: knit approve accepts the revision, knit rollback
	// goes back to the last good one.
	EnvPaused EnvStatus = "paused"
	// EnvWaiting: its last run waits for another environment's output.
	EnvWaiting EnvStatus = "waiting"
)

// EnvStatuses is the closed set, in the order the OpenAPI document lists it.
func EnvStatuses() []EnvStatus {
	return []EnvStatus{EnvNew, EnvApplied, EnvFailed, EnvAwaiting, EnvRejected, EnvInterrupted, EnvDrifted, EnvTornDown, EnvPaused, EnvWaiting}
}
