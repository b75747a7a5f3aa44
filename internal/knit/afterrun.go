package knit

import (
	"fmt"
	"strings"

	"knit.dev/knit/internal/engine"
	"knit.dev/knit/internal/health"
	"knit.dev/knit/internal/notify"
	"knit.dev/knit/internal/store"
)

// AfterRun is what follows the end of a run. It is decided here, once,
// whatever started the run (the server's queues, the CLI, knit
// controller); the adapters only carry it out: queue or run the rollback,
// send the notices, move the pipeline's stage.
type AfterRun struct {
	// Rollback is the run that goes next, in the environment's turn: the
	// run's verification failed and its rollout says onFailure: rollback
	// (nil: nothing follows).
	Rollback *RunRequest
	// StageRollback: the run is a person's rollback (not a rollout's own,
	// not a resume's), so the pipeline stage of its environment holds
	// again the release it went back to, once it succeeded.
	StageRollback bool
	// Notices are what people hear of the run: each component waiting for
	// approval, then how the run ended (a drift check: only what changed).
	Notices []notify.Event
	// Downstream: the run changed outputs its environment exports, so the
	// environments that read them (its consumers) are planned and
	// reconciled again, each under its own autoApprove: Consumers.Runs
	// are their requests, through the one door like any run.
	Downstream bool
}

// Source of the rollback runs a failed rollout starts.
const SourceRollout = "rollout"

// After decides what follows run res of req (nil: it never started or
// ended without a result). actor is whoever carries the follow-up out.
func After(req RunRequest, res *engine.Result, actor string) AfterRun {
	var a AfterRun
	if res == nil {
		return a
	}
	if res.Rollout == engine.RolloutRollback {
		a.Rollback = &RunRequest{Kind: engine.KindRollback, EnvRef: res.Env, Actor: actor, Source: SourceRollout,
			Reason: engine.RollbackReason(res)}
	}
	a.StageRollback = req.Kind == engine.KindRollback && req.Source != SourceRollout && req.Source != SourceRecovery
	a.Notices = notices(req, res)
	a.Downstream = len(res.ExportsChanged) > 0
	return a
}

// notices are what a finished run tells people.
func notices(req RunRequest, res *engine.Result) []notify.Event {
	base := notify.Event{Env: res.Env, RunID: res.RunID, Actor: req.Actor}
	var out []notify.Event
	for _, c := range res.Components {
		if c.Status == engine.Awaiting {
			ev := base
			ev.Kind, ev.Component = notify.KindApprovalNeeded, c.Name
			ev.Summary = fmt.Sprintf("%s in %s waits for approval: %s", c.Name, res.Env, c.Reason)
			out = append(out, ev)
		}
	}
	if res.Kind == engine.KindDrift {
		return append(out, driftNotices(base, res)...)
	}
	ev := base
	switch {
	case res.Verification != nil && res.Verification.Verdict != health.Successful:
		ev.Kind, ev.Summary = notify.KindRolloutFailed, rolloutFailed(res)
	case res.Status == store.StatusSucceeded && res.Kind == engine.KindRollback:
		ev.Kind, ev.Summary = notify.KindRollbackDone, fmt.Sprintf("%s rolled back (revision %d): %s", res.Env, res.Revision, req.Reason)
	case res.Status == store.StatusFailed:
		ev.Kind, ev.Summary = notify.KindRunFailed, fmt.Sprintf("%s of %s failed: %s", res.Kind, res.Env, firstFailure(res))
	case res.Status == store.StatusSucceeded && res.Kind == engine.KindTeardown:
		ev.Kind, ev.Summary = notify.KindTeardownDone, fmt.Sprintf("%s is torn down", res.Env)
	case res.Status == store.StatusSucceeded:
		ev.Kind, ev.Summary = notify.KindRunSucceeded, fmt.Sprintf("%s of %s succeeded", res.Kind, res.Env)
	default:
		return out
	}
	return append(out, ev)
}

// driftNotices are what a finished drift check tells: only a change.
// Drift found where there was none (drift.found, naming the drifted and
// affected components), in sync again where there was drift
// (drift.resolved), or its own failure (run.failed). A check that finds
// what the one before found, in sync or drifted, tells nothing: a
// schedule of every minute would say the same every minute.
func driftNotices(base notify.Event, res *engine.Result) []notify.Event {
	ev := base
	switch {
	case res.Status == store.StatusFailed:
		ev.Kind, ev.Summary = notify.KindRunFailed, fmt.Sprintf("%s of %s failed: %s", res.Kind, res.Env, firstFailure(res))
	case res.HasDrift() && res.Before != store.EnvDrifted:
		var names []string
		for _, c := range res.Components {
			if c.Drift == engine.Drifted || c.Drift == engine.Affected {
				names = append(names, c.Name)
			}
		}
		ev.Kind, ev.Summary = notify.KindDriftFound, fmt.Sprintf("drift in %s: %s", res.Env, strings.Join(names, ", "))
	case !res.HasDrift() && res.Before == store.EnvDrifted && res.Status == store.StatusSucceeded:
		ev.Kind, ev.Summary = notify.KindDriftResolved, fmt.Sprintf("%s is in sync again", res.Env)
	default:
		return nil
	}
	return []notify.Event{ev}
}

// rolloutFailed says which revision failed verification, the check that
// failed it with what it saw, and what follows.
func rolloutFailed(res *engine.Result) string {
	next := "nothing more (rollout.onFailure: none)"
	switch {
	case res.Rollout == engine.RolloutRollback:
		next = "rolling back to the last good revision"
	case res.Rollout == engine.RolloutPaused:
		next = "paused: knit approve accepts it, knit rollback goes back"
	case res.Kind == engine.KindRollback:
		next = "the rollback itself failed verification: not rolled back again"
	}
	return fmt.Sprintf("%s of %s (revision %d) failed verification: %s; %s", res.Kind, res.Env, res.Revision, res.Verification.Summary(), next)
}

// firstFailure says why a run failed in one line: its own error, or its
// first failed component's, whose first line is the tool's own first error
// diagnostic (the log has the rest), or else the first refused one's
// (destroyProtection, a live dependent), not just "failed".
func firstFailure(res *engine.Result) string {
	if res.Error != "" {
		return firstLine(res.Error)
	}
	for _, c := range res.Components {
		if c.Status == engine.Failed {
			return c.Name + ": " + firstLine(c.Reason)
		}
	}
	for _, c := range res.Components {
		if c.Status == engine.Refused {
			return c.Name + " refused: " + firstLine(c.Reason)
		}
	}
	return string(res.Status)
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}
