package view

import "knit.dev/knit/internal/words"

// RunRequest is the body of POST /api/v1/environments/{id}/runs, as the
// server decodes it and the client sends it: what an API caller may ask
// of a run. It is deliberately narrower than knit.RunRequest, the one
// shape of a run's request every door builds: who asks (the token), the
// source, the policy folders and the commit's tree are the server's to
// set, never a caller's, so the server maps this body into one.
type RunRequest struct {
	Kind       words.RunKind `json:"kind"`
	Components []string      `json:"components,omitempty"`
	Reason     string        `json:"reason,omitempty"`
	// Reconcile, for a drift run, brings drifted components back (as
	// their autoApprove says, like knit drift --reconcile).
	Reconcile bool `json:"reconcile,omitempty"`
	// AutoApprove, for a teardown, destroys gated components without
	// waiting (knit teardown --auto-approve, or its "yes"). Starting a run
	// and approving need the same role, so it asks for no other.
	AutoApprove bool `json:"autoApprove,omitempty"`
	// To, for a rollback, is the revision to go back to (0: the last one
	// whose verification succeeded).
	To int `json:"to,omitempty"`
}
