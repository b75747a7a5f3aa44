package web

import (
	"strings"

	"knit.dev/knit/internal/engine"
	"knit.dev/knit/internal/health"
	"knit.dev/knit/internal/knit"
	"knit.dev/knit/internal/store"
	"knit.dev/knit/internal/view"
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

// tones are the tones of every component, run, environment and approval
// status; any other word is neutral.
var tones = func() map[string]Tone {
	m := map[string]Tone{}
	set := func(t Tone, words ...string) {
		for _, w := range words {
			m[w] = t
		}
	}
	set(ToneOK, string(engine.Applied), string(store.StatusSucceeded), string(engine.UpToDate), string(engine.NoChanges),
		string(engine.InSync), string(store.EnvApplied), engine.EnvLabel(store.EnvApplied), store.ApprovalApproved, string(health.Successful))
	set(ToneBusy, string(store.StatusRunning), string(engine.Planning), string(engine.Applying), string(engine.Destroying),
		string(engine.Checking), string(store.StatusQueued))
	// Someone must decide: not the same as waiting behind it.
	set(ToneAct, string(engine.Awaiting), "pending approval", string(engine.EnvPaused))
	set(ToneWait, string(engine.Waiting), string(engine.Planned), string(engine.Drifted), string(engine.Affected), string(engine.Deferred),
		string(health.Inconclusive))
	set(ToneBad, string(engine.Failed), string(engine.Refused), string(engine.Canceled), string(engine.Rejected), string(health.Failed))
	// Promotion pipelines: a release's state in a stage, why one waits.
	set(ToneOK, store.StageSucceeded, view.WaitReady)
	set(ToneBusy, store.StageApplying, view.WaitApplying)
	set(ToneAct, view.WaitAwaitingApproval, view.WaitPaused)
	set(ToneWait, view.WaitSoaking, view.WaitWindowClosed)
	set(ToneBad, store.StageFailed, view.WaitVerificationFailed, view.WaitApplyFailed)
	// A change of a stage's own file.
	set(ToneAct, view.StageChangePending)
	set(ToneBusy, view.StageChangeQueued, view.StageChangeApplying)
	set(ToneOK, view.StageChangeApplied)
	set(ToneBad, view.StageChangeFailed)
	// A set's rollout in waves, and where each environment of it stands.
	set(ToneOK, view.WaveEnvVerified, view.FleetDone)
	set(ToneBusy, view.FleetRolling)
	set(ToneAct, view.FleetHalted)
	return m
}()

// toneOf maps any component, run or environment status to its tone.
func toneOf[S ~string](status S) Tone {
	if t, ok := tones[string(status)]; ok {
		return t
	}
	return ToneNeutral
}

// busy reports whether a status means work is going on (a spinner).
func busy[S ~string](status S) bool { return toneOf(status) == ToneBusy }

// componentState is what a component's node shows: the status of its last
// run where that run stopped it short (waiting, skipped, failed, awaiting
// approval, still running), otherwise its recorded state.
func componentState(c knit.ComponentView) string {
	if c.Status == string(engine.Rejected) { // its run stopped awaiting approval; a person said no since
		return c.Status
	}
	if c.LastRun != nil {
		if stopsShort(c.LastRun.Status) || busy(c.LastRun.Status) {
			return c.LastRun.Status
		}
	}
	if c.Removed && c.Status != string(engine.Destroyed) {
		return c.Status + " (removed from the file)"
	}
	return c.Status
}

// stopsShort reports whether a component run's status stopped the
// component short of its goal (waiting, skipped, failed, refused,
// interrupted, awaiting approval).
func stopsShort(status string) bool {
	switch engine.Status(status) {
	case engine.Waiting, engine.Skipped, engine.Failed, engine.Refused, engine.Canceled, engine.Awaiting:
		return true
	}
	return false
}

// why says in words why a component is where it is, for waiting, skipped,
// failed and refused components; "" when nothing needs explaining.
func why(c knit.ComponentView) string {
	if c.LastRun == nil {
		return ""
	}
	if !stopsShort(c.LastRun.Status) {
		return ""
	}
	if c.LastRun.Status == string(engine.Awaiting) {
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
func envState(status store.EnvStatus, locked bool) string {
	if locked {
		return string(engine.Applying)
	}
	return engine.EnvLabel(status)
}
