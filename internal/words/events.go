package words

// EventKind says what a run's event reports (progress.Event: progress
// displays, server-sent events, notifications).
type EventKind string

// Event kinds.
const (
	// EventRunStarted is always a run's first event, EventRunFinished its last.
	EventRunStarted  EventKind = "run-started"
	EventRunFinished EventKind = "run-finished"
	// EventComponent is a component moving to a new status.
	EventComponent EventKind = "component"
	// EventLog is one line of a tool's output, secrets masked.
	EventLog EventKind = "log"
	// EventVerifying: an apply's components are applied and its health
	// checks run; EventHealth is one check's verdict.
	EventVerifying EventKind = "verifying"
	EventHealth    EventKind = "health"
	// EventPolicy is one decision of the environment's policies about the
	// run's plan, before anything applies.
	EventPolicy EventKind = "policy"
	// EventDropped tells a subscriber that events it had not read yet fell
	// out of the run's live buffer; the next events follow.
	EventDropped EventKind = "dropped"
)

// EventKinds is the closed set, in the order the OpenAPI document lists it.
func EventKinds() []EventKind {
	return []EventKind{EventRunStarted, EventComponent, EventLog, EventRunFinished, EventDropped, EventPolicy, EventVerifying, EventHealth}
}
