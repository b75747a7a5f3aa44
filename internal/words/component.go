package words

// ComponentStatus is where one component stands: in a run (its live
// status and its events), in the store (its state, its component runs)
// and in the API. Statuses are ordered by severity so a run's components
// roll up into one environment status (WorseStatus).
type ComponentStatus string

// Component statuses.
const (
	ComponentPending    ComponentStatus = "pending" // not started yet; in the API, never run
	ComponentPlanning   ComponentStatus = "planning"
	ComponentApplying   ComponentStatus = "applying"
	ComponentDestroying ComponentStatus = "destroying"
	// ComponentRunning is a component run the store recorded before its
	// tool started and that has not ended (RunRunning is the same word).
	ComponentRunning ComponentStatus = "running"

	ComponentUpToDate  ComponentStatus = "up to date"        // fingerprint unchanged: the tool was not run
	ComponentNoChanges ComponentStatus = "no changes"        // planned, nothing to do
	ComponentPlanned   ComponentStatus = "planned"           // plan has changes (plan runs only)
	ComponentDeferred  ComponentStatus = "known after apply" // inputs come from components not yet applied

	ComponentChecking   ComponentStatus = "checking"
	ComponentInSync     ComponentStatus = "in sync"
	ComponentDrifted    ComponentStatus = "drifted"
	ComponentAffected   ComponentStatus = "affected by upstream drift"
	ComponentUnknown    ComponentStatus = "unknown" // drift: the tool cannot compare with reality (a script without plan)
	ComponentNotApplied ComponentStatus = "not applied"
	ComponentApplied    ComponentStatus = "applied"
	ComponentDestroyed  ComponentStatus = "destroyed"
	ComponentAwaiting   ComponentStatus = "awaiting-approval"
	// ComponentRejected: a person rejected the plan that waited for
	// approval; nothing was applied, and the next apply plans again.
	ComponentRejected ComponentStatus = "rejected"
	ComponentWaiting  ComponentStatus = "waiting" // an upstream component awaits approval
	ComponentSkipped  ComponentStatus = "skipped" // an upstream component failed
	ComponentRefused  ComponentStatus = "refused" // destroyProtection, or a live dependent
	ComponentFailed   ComponentStatus = "failed"
	ComponentCanceled ComponentStatus = "interrupted"
)

// ComponentStatuses is the closed set, in the order the OpenAPI document
// lists it.
func ComponentStatuses() []ComponentStatus {
	return []ComponentStatus{
		ComponentPending, ComponentPlanning, ComponentApplying, ComponentDestroying, ComponentRunning,
		ComponentUpToDate, ComponentNoChanges, ComponentPlanned, ComponentDeferred,
		ComponentChecking, ComponentInSync, ComponentDrifted, ComponentAffected, ComponentUnknown,
		ComponentNotApplied, ComponentApplied, ComponentDestroyed, ComponentAwaiting, ComponentRejected,
		ComponentWaiting, ComponentSkipped, ComponentRefused, ComponentFailed, ComponentCanceled,
	}
}

// IsTerminal reports whether the component is done for this run.
func (s ComponentStatus) IsTerminal() bool {
	switch s {
	case ComponentPending, ComponentPlanning, ComponentApplying, ComponentDestroying, ComponentRunning:
		return false
	}
	return true
}

// IsError reports whether the status makes the run fail.
func (s ComponentStatus) IsError() bool {
	return s == ComponentFailed || s == ComponentRefused || s == ComponentSkipped || s == ComponentCanceled
}

var severity = map[ComponentStatus]int{
	ComponentUpToDate: 0, ComponentNoChanges: 0, ComponentApplied: 0, ComponentDestroyed: 0,
	ComponentInSync: 0, ComponentNotApplied: 0, ComponentUnknown: 0, ComponentRejected: 0,
	ComponentPlanned: 1, ComponentDeferred: 1, ComponentDrifted: 1, ComponentAffected: 1,
	ComponentPending: 2, ComponentPlanning: 2, ComponentApplying: 2, ComponentDestroying: 2,
	ComponentRunning: 2, ComponentChecking: 2,
	ComponentWaiting: 3, ComponentAwaiting: 4, ComponentSkipped: 5, ComponentRefused: 6,
	ComponentCanceled: 7, ComponentFailed: 8,
}

// WorseStatus returns the more severe of a and b.
func WorseStatus(a, b ComponentStatus) ComponentStatus {
	if severity[b] > severity[a] {
		return b
	}
	return a
}
