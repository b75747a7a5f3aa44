package web

import (
	"strings"

	"knit.dev/knit/internal/engine"
	"knit.dev/knit/internal/knit"
)

// Tone is the colour family of a state, shared by badges and graph nodes.
type Tone string

// Tones, from good to bad.
const (
	ToneOK      Tone = "ok"      // applied, in sync, up to date
	ToneBusy    Tone = "busy"    // planning, applying, running
	ToneAct     Tone = "act"     // needs a person: awaiting approval
	ToneWait    Tone = "wait"    // waiting behind something, planned, drifted
	ToneBad     Tone = "bad"     // failed, refused, interrupted
	ToneNeutral Tone = "neutral" // pending, skipped, destroyed, torn down
)

// toneOf maps any component, run or environment status to its tone.
func toneOf(status string) Tone {
	switch status {
	case "applied", "succeeded", "up to date", "no changes", "in sync", engine.EnvApplied, "approved":
		return ToneOK
	case "running", "planning", "applying", "destroying", "checking", "queued":
		return ToneBusy
	case "awaiting-approval", "pending approval":
		// Someone must decide: not the same as waiting behind it.
		return ToneAct
	case "waiting", "planned", "drifted", "affected by upstream drift", "known after apply":
		return ToneWait
	case "failed", "refused", "interrupted", "rejected":
		return ToneBad
	}
	return ToneNeutral
}

// busy reports whether a status means work is going on (a spinner).
func busy(status string) bool { return toneOf(status) == ToneBusy }

// componentState is what a component's node shows: the status of its last
// run where that run stopped it short (waiting, skipped, failed, awaiting
// approval, still running), otherwise its recorded state.
func componentState(c knit.ComponentView) string {
	if c.Status == string(engine.Rejected) { // its run stopped awaiting approval; a person said no since
		return c.Status
	}
	if c.LastRun != nil {
		switch c.LastRun.Status {
		case "running", "planning", "applying", "destroying", "checking",
			"waiting", "skipped", "awaiting-approval", "failed", "refused", "interrupted":
			return c.LastRun.Status
		}
	}
	if c.Removed && c.Status != "destroyed" {
		return c.Status + " (removed from the file)"
	}
	return c.Status
}

// why says in words why a component is where it is, for waiting, skipped,
// failed and refused components; "" when nothing needs explaining.
func why(c knit.ComponentView) string {
	if c.LastRun == nil {
		return ""
	}
	switch c.LastRun.Status {
	case "waiting", "skipped", "failed", "refused", "interrupted", "awaiting-approval":
	default:
		return ""
	}
	if c.LastRun.Status == "awaiting-approval" {
		// The engine's reason names a CLI command; a web user decides here.
		return needsYou
	}
	if c.Reason != "" {
		return c.Reason
	}
	return strings.TrimSpace(c.Code)
}

// needsYou is why an awaiting component waits, on the dashboard.
const needsYou = "needs a person to approve or reject its plan"

// envState is an environment's state in words: applying while a run holds
// its lock, otherwise its recorded status as the CLI shows it too.
func envState(status string, locked bool) string {
	if locked {
		return "applying"
	}
	return engine.EnvLabel(status)
}
