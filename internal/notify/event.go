package notify

import (
	"strings"
	"time"

	"knit.dev/knit/internal/words"
)

// Kind is an event's kind (words.NotifyKind), each "subject.event". A
// Sink's Events filter and an Event's Kind use these (a filter may also
// name a kind by its old spelling, see Canonical).
type Kind = words.NotifyKind

// Event kinds (words.Notify*).
const (
	KindRunFailed      = words.NotifyRunFailed
	KindRunSucceeded   = words.NotifyRunSucceeded
	KindDriftFound     = words.NotifyDriftFound
	KindApprovalNeeded = words.NotifyApprovalNeeded
	KindTeardownDone   = words.NotifyTeardownDone
	// KindInvalidRevision: a commit's environment file does not validate;
	// nothing of it runs. File, Revision, Commit and Errors say which and why.
	KindInvalidRevision = words.NotifyInvalidRevision
	// KindTTLExpiring: an ephemeral environment (spec.ttl) is torn down
	// soon; Summary says when and how to keep it.
	KindTTLExpiring = words.NotifyTTLExpiring
	// KindPreviewReady: a branch's commit was previewed (knit serve
	// --preview-branches); Branch and Commit say which, Markdown is the
	// summary a CI job posts as the pull request's comment.
	KindPreviewReady = words.NotifyPreviewReady

	// KindRolloutFailed: an apply's health checks did not succeed; Summary
	// names the check and what it saw (status code, query value) and what
	// follows (a rollback, a pause, nothing). It replaces run.failed for
	// such a run.
	KindRolloutFailed = words.NotifyRolloutFailed
	// KindRollbackDone: a rollback run succeeded; Summary says to which
	// revision and why it ran.
	KindRollbackDone = words.NotifyRollbackDone
	// KindDriftResolved: a drift check found in sync an environment the
	// one before had found drifted (a drift check otherwise tells only of
	// drift found, or of its own failure).
	KindDriftResolved = words.NotifyDriftResolved
	// The kinds of a pipeline's releases (Pipeline, Release and Stage say
	// which; Env is the stage's environment): waiting for an approval,
	// for a window, verified and failed in a stage.
	KindReleaseAwaitingApproval = words.NotifyReleaseAwaitingApproval
	KindReleaseWindowClosed     = words.NotifyReleaseWindowClosed
	KindReleaseVerified         = words.NotifyReleaseVerified
	KindReleaseFailed           = words.NotifyReleaseFailed
	// KindStagePending: a merged commit changed a stage's own file and
	// the change waits for approvals (Pipeline and Stage say where,
	// Release is the change's ID, c-…).
	KindStagePending = words.NotifyStagePending
	// KindRolloutStep: a rollout's step starts, pauses, or is promoted
	// past its pause; KindRolloutAborted and KindRolloutPromoted: the
	// rollout ended on the stable revision, or on the new one. Summary is
	// the audit entry's detail.
	KindRolloutStep     = words.NotifyRolloutStep
	KindRolloutAborted  = words.NotifyRolloutAborted
	KindRolloutPromoted = words.NotifyRolloutPromoted
)

// Kinds is every event kind, in the order error messages name them.
func Kinds() []Kind { return words.NotifyKinds() }

// Canonical is the one spelling of kind k: itself, or the kind an old
// spelling (run-failed) names.
func Canonical(k string) Kind {
	c, _ := words.NotifyKindOf(k)
	return c
}

// kindList is every kind, comma-separated, for an error message.
func kindList() string {
	var out []string
	for _, k := range Kinds() {
		out = append(out, string(k))
	}
	return strings.Join(out, ", ")
}

func knownKind(k string) bool {
	_, ok := words.NotifyKindOf(k)
	return ok
}

// Event is something a person may want to hear about. Kind must be one of
// the Kind constants; Env, the environment, orders delivery (see
// Dispatcher). The other fields are informational and may be empty; a zero
// Time is set to the Dispatcher's clock by Notify. URL, if set, links to the
// dashboard.
type Event struct {
	Kind      Kind
	Env       string
	RunID     string
	Component string
	Actor     string
	Summary   string
	Time      time.Time
	URL       string
	// File, Revision, Commit and Errors describe an invalid revision: the
	// environment file, the revision recording it, its commit and every
	// validation error ("file:line:col: field: message").
	File     string   `json:",omitempty"`
	Revision int      `json:",omitempty"`
	Commit   string   `json:",omitempty"`
	Errors   []string `json:",omitempty"`
	// Branch and Markdown describe a preview (KindPreviewReady).
	Branch   string `json:",omitempty"`
	Markdown string `json:",omitempty"`
	// Pipeline, Release and Stage name a release's stage (KindRelease*).
	Pipeline string `json:",omitempty"`
	Release  string `json:",omitempty"`
	Stage    string `json:",omitempty"`
}

// webhookBody is the JSON a webhook sink receives. Every field is always
// present, empty strings included, so receivers can rely on the shape.
type webhookBody struct {
	Sink      string    `json:"sink"`
	Seq       uint64    `json:"seq"`
	Kind      string    `json:"kind"`
	Env       string    `json:"env"`
	RunID     string    `json:"runId"`
	Component string    `json:"component"`
	Actor     string    `json:"actor"`
	Summary   string    `json:"summary"`
	Time      time.Time `json:"time"`
	URL       string    `json:"url"`
	File      string    `json:"file"`
	Revision  int       `json:"revision"`
	Commit    string    `json:"commit"`
	Errors    []string  `json:"errors"`
	Branch    string    `json:"branch"`
	Markdown  string    `json:"markdown"`
	Pipeline  string    `json:"pipeline"`
	Release   string    `json:"release"`
	Stage     string    `json:"stage"`
}

func newWebhookBody(sink string, seq uint64, ev Event) webhookBody {
	b := webhookBody{
		Sink: sink, Seq: seq, Kind: string(ev.Kind), Env: ev.Env, RunID: ev.RunID,
		Component: ev.Component, Actor: ev.Actor, Summary: ev.Summary,
		Time: ev.Time.UTC(), URL: ev.URL,
		File: ev.File, Revision: ev.Revision, Commit: ev.Commit, Errors: ev.Errors,
		Branch: ev.Branch, Markdown: ev.Markdown,
		Pipeline: ev.Pipeline, Release: ev.Release, Stage: ev.Stage,
	}
	if b.Errors == nil {
		b.Errors = []string{}
	}
	return b
}
