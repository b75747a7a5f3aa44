package knit

import (
	"sync/atomic"

	"knit.dev/knit/internal/notify"
	"knit.dev/knit/internal/store"
)

// SetRolloutNotify has every audit entry of a rollout that people hear of
// (a step's start or pause, a person's promote, the abort, the end) told
// to fn as well, as it is written: knit serve hands its notifications'
// dispatcher in. Without one nothing is told (the CLI's foreground).
func SetRolloutNotify(k *Knit, fn func(notify.Event)) { k.rolloutNotify.p.Store(&fn) }

// rolloutNotifier holds SetRolloutNotify's fn.
type rolloutNotifier struct {
	p atomic.Pointer[func(notify.Event)]
}

// tell tells the rollout audit entry ev, written, to the notifier if
// there is one.
func (n *rolloutNotifier) tell(ev *store.AuditEvent) {
	fn := n.p.Load()
	if ev == nil || fn == nil || *fn == nil {
		return
	}
	out := notify.Event{Env: ev.Env, RunID: ev.RunID, Actor: ev.Actor, Summary: ev.Env + ": " + ev.Detail, Time: ev.Time}
	switch ev.Action {
	case auditRollout:
		out.Kind = notify.KindRolloutStep
	case auditAbort:
		out.Kind = notify.KindRolloutAborted
	case auditPromoted:
		out.Kind = notify.KindRolloutPromoted
	default:
		return // rollout-start: its first step's run is told
	}
	if ev.Reason != "" {
		out.Summary += " (" + ev.Reason + ")"
	}
	(*fn)(out)
}
