package engine

import "knit.dev/knit/internal/words"

// Reason is why a component is where it is, for machines
// (words.Reason): one of a closed set, carried with structured fields in
// a store.Cause. The API's OpenAPI document enumerates every Reason
// (ReasonCode).
type Reason = words.Reason

// Reasons the engine and the library report (words.Reason*). A status
// that says it all (applied, up to date, in sync) carries none.
const (
	ReasonAwaitingApproval            = words.ReasonAwaitingApproval
	ReasonUpstreamAwaitingApproval    = words.ReasonUpstreamAwaitingApproval
	ReasonDependentAwaitingApproval   = words.ReasonDependentAwaitingApproval
	ReasonUpstreamFailed              = words.ReasonUpstreamFailed
	ReasonDependencyCycle             = words.ReasonDependencyCycle
	ReasonKnownAfterApply             = words.ReasonKnownAfterApply
	ReasonRefused                     = words.ReasonRefused
	ReasonToolFailed                  = words.ReasonToolFailed
	ReasonRecordFailed                = words.ReasonRecordFailed
	ReasonInterrupted                 = words.ReasonInterrupted
	ReasonDrifted                     = words.ReasonDrifted
	ReasonUpstreamDrifted             = words.ReasonUpstreamDrifted
	ReasonNeverApplied                = words.ReasonNeverApplied
	ReasonUnchecked                   = words.ReasonUnchecked
	ReasonRejected                    = words.ReasonRejected
	ReasonUpstreamRejected            = words.ReasonUpstreamRejected
	ReasonVerificationFailed          = words.ReasonVerificationFailed
	ReasonVerificationInconclusive    = words.ReasonVerificationInconclusive
	ReasonPolicyDenied                = words.ReasonPolicyDenied
	ReasonUpstreamEnvironmentNotReady = words.ReasonUpstreamEnvironmentNotReady
)

// Reasons is the closed set, in the order the OpenAPI document lists it.
func Reasons() []Reason { return words.Reasons() }
