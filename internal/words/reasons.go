package words

// Reason is why a component is where it is, for machines: one of a closed
// set, carried with structured fields in a Cause (the components it
// names, the approval it waits on). Beside it, a component's Reason text
// and Code say it for people; nothing parses those back. The API's
// OpenAPI document enumerates every Reason (ReasonCode).
type Reason string

// Reasons the engine and the library report. A status that says it all
// (applied, up to date, in sync) carries none.
const (
	// ReasonAwaitingApproval: the component's plan waits for a person
	// (ApprovalID).
	ReasonAwaitingApproval Reason = "AwaitingApproval"
	// ReasonUpstreamAwaitingApproval: not run, because a component it
	// depends on waits for approval (Upstream).
	ReasonUpstreamAwaitingApproval Reason = "UpstreamAwaitingApproval"
	// ReasonDependentAwaitingApproval: in a teardown, not destroyed,
	// because a component that depends on it waits for approval of its
	// destroy (Upstream: the walk is reversed).
	ReasonDependentAwaitingApproval Reason = "DependentAwaitingApproval"
	// ReasonUpstreamFailed: skipped, because a component it depends on
	// failed (Upstream; in a teardown, a dependent).
	ReasonUpstreamFailed Reason = "UpstreamFailed"
	// ReasonDependencyCycle: skipped, because the graph has a cycle.
	ReasonDependencyCycle Reason = "DependencyCycle"
	// ReasonKnownAfterApply: a plan could not be made, because an input
	// is known only after a producer is applied (Upstream: producer.output).
	ReasonKnownAfterApply Reason = "KnownAfterApply"
	// ReasonRefused: a teardown refused to destroy it (destroyProtection,
	// or a live dependent).
	ReasonRefused Reason = "Refused"
	// ReasonToolFailed: its tool (or preparing its inputs) failed.
	ReasonToolFailed Reason = "ToolFailed"
	// ReasonRecordFailed: the store refused to record it, or its step
	// broke (a panic); the run fails.
	ReasonRecordFailed Reason = "RecordFailed"
	// ReasonInterrupted: the run was interrupted before or while it ran.
	ReasonInterrupted Reason = "Interrupted"
	// ReasonDrifted: a drift check found reality differs from it.
	ReasonDrifted Reason = "Drifted"
	// ReasonUpstreamDrifted: it takes outputs that drift upstream changes
	// (Upstream: producer.output).
	ReasonUpstreamDrifted Reason = "UpstreamDrifted"
	// ReasonNeverApplied: nothing of it exists to check or destroy.
	ReasonNeverApplied Reason = "NeverApplied"
	// ReasonUnchecked: its tool cannot compare with reality (a script
	// without a plan command).
	ReasonUnchecked Reason = "Unchecked"
	// ReasonRejected: a person rejected its plan.
	ReasonRejected Reason = "Rejected"
	// ReasonUpstreamRejected: not run, because the plan of a component it
	// waited behind was rejected (Upstream).
	ReasonUpstreamRejected Reason = "UpstreamRejected"
	// ReasonVerificationFailed: a health check run after the apply
	// failed; ReasonVerificationInconclusive: one could not tell.
	ReasonVerificationFailed       Reason = "VerificationFailed"
	ReasonVerificationInconclusive Reason = "VerificationInconclusive"
	// ReasonPolicyDenied: not run, because a policy denied the run's plan
	// (the run's Policy names the file and rule of each denial).
	ReasonPolicyDenied Reason = "PolicyDenied"
	// ReasonUpstreamEnvironmentNotReady: not run, because an input reads
	// an output another environment does not hold yet (Upstream: that
	// environment, TEAM/ENV); it runs once the producer applies it.
	ReasonUpstreamEnvironmentNotReady Reason = "UpstreamEnvironmentNotReady"
)

// Reasons is the closed set, in the order the OpenAPI document lists it.
func Reasons() []Reason {
	return []Reason{
		ReasonAwaitingApproval, ReasonUpstreamAwaitingApproval, ReasonDependentAwaitingApproval,
		ReasonUpstreamFailed, ReasonDependencyCycle, ReasonKnownAfterApply, ReasonRefused,
		ReasonToolFailed, ReasonRecordFailed, ReasonInterrupted, ReasonDrifted, ReasonUpstreamDrifted,
		ReasonNeverApplied, ReasonUnchecked, ReasonRejected, ReasonUpstreamRejected,
		ReasonVerificationFailed, ReasonVerificationInconclusive, ReasonPolicyDenied, ReasonUpstreamEnvironmentNotReady,
	}
}

// Cause is why a component is where it is, for machines: a Reason
// ("UpstreamAwaitingApproval") with the components it names and the
// approval it waits on. The prose beside it (a component's Reason text and
// Code) is for people and never parsed back. The store keeps it with each
// component state and run (store.Cause).
type Cause struct {
	ReasonCode string `json:"reasonCode,omitempty"`
	// Upstream names what the reason is about: components
	// (UpstreamFailed, UpstreamAwaitingApproval) or, for reasons about
	// outputs (KnownAfterApply, UpstreamDrifted), component.output.
	Upstream   []string `json:"upstream,omitempty"`
	ApprovalID int64    `json:"approvalId,omitempty"`
}

// Cause is r with what it names: Cause{ReasonCode: r, Upstream: upstream}.
func (r Reason) Cause(upstream ...string) Cause {
	return Cause{ReasonCode: string(r), Upstream: upstream}
}
