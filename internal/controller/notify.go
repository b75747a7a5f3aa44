package controller

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"knit.dev/knit/internal/controller/runqueue"
	"knit.dev/knit/internal/engine"
	"knit.dev/knit/internal/health"
	"knit.dev/knit/internal/notify"
	"knit.dev/knit/internal/store"
)

// notifications are what a finished run tells the sinks: each component
// waiting for approval, drift found, then how the run ended.
func notifications(j *runqueue.Job, res *engine.Result) []notify.Event {
	if res == nil {
		return nil
	}
	base := notify.Event{Env: res.Env, RunID: res.RunID, Actor: j.Req.Actor}
	var out []notify.Event
	for _, c := range res.Components {
		if c.Status == engine.Awaiting {
			ev := base
			ev.Kind, ev.Component = notify.KindApprovalNeeded, c.Name
			ev.Summary = fmt.Sprintf("%s in %s waits for approval: %s", c.Name, res.Env, c.Reason)
			out = append(out, ev)
		}
	}
	if res.Kind == engine.KindDrift && res.HasDrift() {
		var names []string
		for _, c := range res.Components {
			if c.Drift == engine.Drifted || c.Drift == engine.Affected {
				names = append(names, c.Name)
			}
		}
		ev := base
		ev.Kind, ev.Summary = notify.KindDriftFound, fmt.Sprintf("drift in %s: %s", res.Env, strings.Join(names, ", "))
		out = append(out, ev)
	}
	ev := base
	switch {
	case res.Verification != nil && res.Verification.Verdict != health.Successful:
		ev.Kind, ev.Summary = notify.KindRolloutFailed, rolloutFailed(res)
	case res.Status == store.StatusSucceeded && res.Kind == engine.KindRollback:
		ev.Kind, ev.Summary = notify.KindRollbackDone, fmt.Sprintf("%s rolled back (revision %d): %s", res.Env, res.Revision, j.Req.Reason)
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
// diagnostic (the log has the rest).
func firstFailure(res *engine.Result) string {
	if res.Error != "" {
		return firstLine(res.Error)
	}
	for _, c := range res.Components {
		if c.Status == engine.Failed {
			return c.Name + ": " + firstLine(c.Reason)
		}
	}
	return string(res.Status)
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}

// outbox keeps the dispatcher's undelivered events in the store, each as
// the event's JSON.
type outbox struct{ s store.Outbox }

func (o outbox) Add(ctx context.Context, ev notify.Event, sinks []string) (uint64, []int64, error) {
	body, err := json.Marshal(ev)
	if err != nil {
		return 0, nil, err
	}
	seq, ids, err := o.s.AddNotification(ctx, ev.Env, sinks, body)
	return uint64(seq), ids, err
}

func (o outbox) Done(ctx context.Context, id int64) error { return o.s.DeleteNotification(ctx, id) }

func (o outbox) Pending(ctx context.Context) ([]notify.Pending, error) {
	ns, err := o.s.PendingNotifications(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]notify.Pending, 0, len(ns))
	for _, n := range ns {
		p := notify.Pending{ID: n.ID, Sink: n.Sink, Seq: uint64(n.Seq)}
		if err := json.Unmarshal(n.Body, &p.Event); err != nil {
			return nil, fmt.Errorf("notification %d of %s: %w", n.ID, n.Env, err)
		}
		out = append(out, p)
	}
	return out, nil
}
