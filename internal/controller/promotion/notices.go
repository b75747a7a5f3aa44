package promotion

import (
	"fmt"
	"sync"

	"knit.dev/knit/internal/notify"
	"knit.dev/knit/internal/store"
	"knit.dev/knit/internal/view"
)

// told remembers, per pipeline stage, the wait it last told people of, so
// a release waiting for an approval or a window is told once, not every
// tick. It is this process's memory: after a restart, a wait still going
// on is told once more.
type told struct {
	mu   sync.Mutex
	last map[string]string // pipeline/stage → release/reason
}

// again reports whether what was not told yet for key, and records it.
func (t *told) again(key, what string) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.last == nil {
		t.last = map[string]string{}
	}
	if t.last[key] == what {
		return false
	}
	t.last[key] = what
	return true
}

// tellWaiting tells of each release that waits for a person's approval
// (to enter a stage, or at its environment's gate inside it) or for a
// promotion window, once per release, stage and reason.
func (c *Controller) tellWaiting(p view.Pipeline) {
	for _, st := range p.Stages {
		var kind notify.Kind
		w := st.Waiting
		switch {
		case w == nil:
		case w.Reason == view.WaitAwaitingApproval:
			kind = notify.KindReleaseAwaitingApproval
		case w.Reason == view.WaitWindowClosed:
			kind = notify.KindReleaseWindowClosed
		}
		what := ""
		if kind != "" {
			what = w.Release + "/" + w.Reason
		}
		if !c.told.again(p.Name+"/"+st.Name, what) || kind == "" {
			continue
		}
		c.notify(notify.Event{Kind: kind, Env: st.Env, Pipeline: p.Name, Release: w.Release, Stage: st.Name,
			Summary: fmt.Sprintf("release %s of pipeline %s waits to enter %s: %s", w.Release, p.Name, st.Name, w.Message)})
	}
}

// tellEnded tells of a release's run ending in a stage: verified there,
// or failed (it never moves on).
func (c *Controller) tellEnded(s view.StageState, env string) {
	ev := notify.Event{Env: env, RunID: s.RunID, Pipeline: s.Pipeline, Release: s.Release, Stage: s.Stage}
	switch s.State {
	case store.StageSucceeded:
		ev.Kind, ev.Summary = notify.KindReleaseVerified, fmt.Sprintf("release %s of pipeline %s is verified in %s", s.Release, s.Pipeline, s.Stage)
	case store.StageFailed:
		ev.Kind, ev.Summary = notify.KindReleaseFailed, fmt.Sprintf("release %s of pipeline %s failed in %s (%s): %s", s.Release, s.Pipeline, s.Stage, s.Reason, firstLine(s.Message))
	default:
		return
	}
	c.notify(ev)
}

func (c *Controller) notify(ev notify.Event) {
	if c.cfg.Notify != nil {
		ev.Time = c.clock.Now()
		c.cfg.Notify.Notify(ev)
	}
}
