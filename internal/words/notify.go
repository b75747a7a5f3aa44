package words

import "maps"

// NotifyKind is the kind of a notification (internal/notify's Event): the
// word a sink's events filter in knit.yaml names, and a webhook's kind.
// Each is spelt "subject.event"; NotifyKindOf also reads the old
// spellings.
type NotifyKind string

// Notification kinds.
const (
	NotifyRunFailed      NotifyKind = "run.failed"
	NotifyRunSucceeded   NotifyKind = "run.succeeded"
	NotifyDriftFound     NotifyKind = "drift.found"
	NotifyApprovalNeeded NotifyKind = "approval.needed"
	NotifyTeardownDone   NotifyKind = "teardown.done"
	// NotifyInvalidRevision: a commit's environment file does not
	// validate; nothing of it runs.
	NotifyInvalidRevision NotifyKind = "invalid.revision"
	// NotifyTTLExpiring: an ephemeral environment (spec.ttl) is torn down soon.
	NotifyTTLExpiring NotifyKind = "ttl.expiring"
	// NotifyPreviewReady: a branch's commit was previewed.
	NotifyPreviewReady NotifyKind = "preview.ready"
	// NotifyRolloutFailed: an apply's health checks did not succeed; it
	// replaces run.failed for such a run.
	NotifyRolloutFailed NotifyKind = "rollout.failed"
	// NotifyRollbackDone: a rollback run succeeded.
	NotifyRollbackDone NotifyKind = "rollback.done"
	// NotifyDriftResolved: a drift check found in sync an environment
	// the one before had found drifted.
	NotifyDriftResolved NotifyKind = "drift.resolved"
	// NotifyReleaseAwaitingApproval: a pipeline's release waits for a
	// person's approval to enter a stage, or in one (its environment's gate).
	NotifyReleaseAwaitingApproval NotifyKind = "release.awaiting-approval"
	// NotifyReleaseWindowClosed: a release is ready for a stage whose
	// promotion windows are all closed.
	NotifyReleaseWindowClosed NotifyKind = "release.window-closed"
	// NotifyReleaseVerified: a release applied and verified in a stage.
	NotifyReleaseVerified NotifyKind = "release.verified"
	// NotifyReleaseFailed: a release's run failed in a stage (its apply
	// or its verification): it never moves on from there.
	NotifyReleaseFailed NotifyKind = "release.failed"
	// NotifyStagePending: a merged commit changed a stage's own file and
	// the change waits, Pending, for approvals (applyStageChanges: pending).
	NotifyStagePending NotifyKind = "stage.pending"
	// NotifyRolloutStep: a rollout by the environment's strategy starts a
	// step's run, pauses, or a person promotes it past a pause.
	NotifyRolloutStep NotifyKind = "rollout.step"
	// NotifyRolloutAborted: a rollout ended aborted: the environment is
	// on its stable revision again.
	NotifyRolloutAborted NotifyKind = "rollout.aborted"
	// NotifyRolloutPromoted: a rollout ended with the new revision on the
	// stable instances.
	NotifyRolloutPromoted NotifyKind = "rollout.promoted"
)

// NotifyKinds is the closed set, in the order error messages and
// docs/server.md's table name them.
func NotifyKinds() []NotifyKind {
	return []NotifyKind{NotifyRunFailed, NotifyRunSucceeded, NotifyDriftFound, NotifyApprovalNeeded, NotifyTeardownDone,
		NotifyInvalidRevision, NotifyTTLExpiring, NotifyPreviewReady, NotifyRolloutFailed, NotifyRollbackDone, NotifyDriftResolved,
		NotifyReleaseAwaitingApproval, NotifyReleaseWindowClosed, NotifyReleaseVerified, NotifyReleaseFailed,
		NotifyStagePending, NotifyRolloutStep, NotifyRolloutAborted, NotifyRolloutPromoted}
}

// oldSpellings are the first kinds' old spellings, still accepted where a
// kind is named (a sink's events in knit.yaml, an outbox written before).
var oldSpellings = map[string]NotifyKind{
	"run-failed": NotifyRunFailed, "run-succeeded": NotifyRunSucceeded, "drift-found": NotifyDriftFound,
	"approval-needed": NotifyApprovalNeeded, "teardown-done": NotifyTeardownDone,
}

// OldNotifySpellings maps each old spelling (run-failed) to the kind it names.
func OldNotifySpellings() map[string]NotifyKind { return maps.Clone(oldSpellings) }

// NotifyKindOf is the kind word names in its one spelling: word itself
// when it is a kind, or the kind an old spelling names. ok is false when
// word names no kind.
func NotifyKindOf(word string) (kind NotifyKind, ok bool) {
	if k, old := oldSpellings[word]; old {
		return k, true
	}
	for _, k := range NotifyKinds() {
		if string(k) == word {
			return k, true
		}
	}
	return NotifyKind(word), false
}
