// Package words is knit's vocabulary: every closed set of words it
// writes for machines (the API, the store, events, notifications), each
// typed once, with the list the code iterates where it iterates one: a
// run's status and kind and an environment's status (run.go), a
// component's status (component.go), event kinds (events.go), reason
// codes and their Cause (reasons.go), health verdicts (health.go), plan
// actions (plan.go), API error codes (errors.go), notification kinds and
// their old spellings (notify.go), and here approval and change-set statuses, a release's
// stage states and why it waits, verification verdicts, preview changes
// and statuses, and policy decision kinds. The packages that used to
// declare them (store, progress, engine, health, plan, notify, view)
// name them by alias under their old names. A test of the server checks
// every set against the OpenAPI document (or the docs) and that no other
// package declares one. It imports nothing internal.
package words

// ApprovalStatus is where an approval (or a change set) stands: pending
// waits for a person; approved is decided but not yet applied; applied,
// rejected and stale are final.
type ApprovalStatus string

// Approval statuses.
const (
	ApprovalPending  ApprovalStatus = "pending"
	ApprovalApproved ApprovalStatus = "approved"
	ApprovalRejected ApprovalStatus = "rejected"
	ApprovalApplied  ApprovalStatus = "applied"
	ApprovalStale    ApprovalStatus = "stale"
)

// StageState is where a release stands in a pipeline's stage.
type StageState string

// Stage states.
const (
	StageQueued    StageState = "queued"    // a person asked for it again (a rollback): the server applies it
	StageApplying  StageState = "applying"  // a run applies the release to the stage
	StageSucceeded StageState = "succeeded" // applied and verified: soaking, then free to move on
	StageFailed    StageState = "failed"    // its run failed there: it never moves on
)

// StageChangeState is where a change of a stage's own file stands (a
// commit that changed the file a pipeline stage names with file:).
type StageChangeState string

// Stage change states.
const (
	StageChangePending  StageChangeState = "Pending"  // it waits for approvals (applyStageChanges: pending)
	StageChangeQueued   StageChangeState = "Queued"   // immediate or approved: the server applies it once the stage is free
	StageChangeApplying StageChangeState = "Applying" // a run applies it to the stage's current release
	StageChangeApplied  StageChangeState = "Applied"  // the stage's environment runs it (its own run, or a release that carried it)
	StageChangeFailed   StageChangeState = "Failed"   // its run failed: a later commit or a release carrying it replaces it
)

// WaitReason is why a release waits at the entry of a stage, or stopped in one.
type WaitReason string

// Wait reasons.
const (
	WaitSoaking            WaitReason = "Soaking"            // the stage before has not soaked it long enough
	WaitWindowClosed       WaitReason = "WindowClosed"       // no promotion window of the stage is open
	WaitAwaitingApproval   WaitReason = "AwaitingApproval"   // the stage needs more approvals
	WaitVerificationFailed WaitReason = "VerificationFailed" // its health checks failed there: it never moves on
	WaitApplyFailed        WaitReason = "ApplyFailed"        // its run failed there before verification
	WaitApplying           WaitReason = "Applying"           // a run applies it now
	WaitPaused             WaitReason = "Paused"             // its rollout paused there: a person accepts it or rolls back
	WaitReady              WaitReason = "Ready"              // every gate is open: the server applies it
)

// Verification is how a revision's verification ended. A revision is
// good, one a rollback may go back to, when it is Successful or Accepted
// (a person accepted it when its rollout paused).
type Verification string

// Verification verdicts.
const (
	VerificationSuccessful   Verification = "Successful"
	VerificationFailed       Verification = "Failed"
	VerificationInconclusive Verification = "Inconclusive"
	VerificationAccepted     Verification = "Accepted"
)

// PreviewChange is what a branch does to an environment file.
type PreviewChange string

// Preview changes.
const (
	PreviewCreate  PreviewChange = "create"
	PreviewUpdate  PreviewChange = "update"
	PreviewDestroy PreviewChange = "destroy"
)

// PreviewStatus is how a preview of an environment ended.
type PreviewStatus string

// Preview statuses.
const (
	PreviewPlanned PreviewStatus = "planned"
	PreviewFailed  PreviewStatus = "failed"
	PreviewInvalid PreviewStatus = "invalid"
	// PreviewTimedOut: the preview did not end within its deadline, and
	// its tools were stopped.
	PreviewTimedOut PreviewStatus = "timed-out"
)

// DecisionKind is a policy rule's name in package knit: what a decision does.
type DecisionKind string

// Decision kinds.
const (
	DecisionDeny            DecisionKind = "deny"
	DecisionWarn            DecisionKind = "warn"
	DecisionRequireApproval DecisionKind = "require_approval"
)
