package gitops

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"knit.dev/knit/internal/engine"
	"knit.dev/knit/internal/fleet"
	"knit.dev/knit/internal/gitwatch"
	"knit.dev/knit/internal/knit"
	"knit.dev/knit/internal/store"
	"knit.dev/knit/internal/view"
)

// patchRollout reads set's rollout, lets fn change it, and writes it back
// when fn changed it, over the version read: a write someone made
// meanwhile (an operator's action) is read again and fn applied to it.
func (ro *rollouts) patchRollout(ctx context.Context, set string, fn func(r *view.WaveRollout) error) (*view.WaveRollout, error) {
	g := ro.g
	for try := 0; ; try++ {
		r, ver, err := g.k.State().WaveRollout(ctx, set)
		if err != nil || r == nil {
			return nil, err
		}
		before, _ := json.Marshal(r) // plain values: cannot fail
		if err := fn(r); err != nil {
			return nil, err
		}
		if after, _ := json.Marshal(r); string(after) == string(before) {
			return r, nil
		}
		err = g.k.State().PutWaveRollout(ctx, r, ver, nil)
		if errors.Is(err, store.ErrConflict) && try < 5 {
			continue
		}
		return r, err
	}
}

// advance follows the runs of set's rollout, moves it on (fleet.Next),
// and marks the environments to start now as applying (with no run yet:
// startWave queues each and records its run).
func (ro *rollouts) advance(ctx context.Context, set string, wants map[string]gitWant) (start []string, wake time.Time, err error) {
	g := ro.g
	_, err = ro.patchRollout(ctx, set, func(r *view.WaveRollout) error {
		now := g.clock.Now()
		for i := range r.Envs {
			if e := &r.Envs[i]; e.State == view.WaveEnvApplying {
				if err := ro.followWave(ctx, set, r, e, now); err != nil {
					return err
				}
			}
		}
		start, wake = fleet.Next(r, now)
		for _, id := range start {
			if _, ok := wants[id]; !ok {
				// A later commit tore it down or stopped rolling it: nothing to apply.
				e := r.Env(id)
				e.State, e.Message, e.ChangedAt = view.WaveEnvSkipped, "no change of the set waits for it any more", now
				continue
			}
			fleet.Started(r, id, "", now)
			ro.runs.mark(&ro.runs.starting, set+"|"+id, true)
		}
		return nil
	})
	var out []string
	for _, id := range start {
		if ro.runs.has(ro.runs.starting, set+"|"+id) {
			out = append(out, id)
		}
	}
	if err != nil {
		for _, id := range out {
			ro.runs.mark(&ro.runs.starting, set+"|"+id, false)
		}
		return nil, time.Time{}, err
	}
	return out, wake, nil
}

// followWave records what became of the run applying e.
func (ro *rollouts) followWave(ctx context.Context, set string, r *view.WaveRollout, e *view.WaveEnv, now time.Time) error {
	g := ro.g
	if e.RunID == "" {
		if !ro.runs.has(ro.runs.starting, set+"|"+e.ID) {
			fleet.Unstarted(r, e.ID, "its run was not queued before the server stopped: asked for again", now)
		}
		return nil
	}
	run, err := g.k.RunRecord(ctx, e.RunID)
	if errors.Is(err, store.ErrNotFound) {
		if !ro.runs.has(ro.runs.queued, e.RunID) && !ro.inQueue(e.RunID) {
			fleet.Unstarted(r, e.ID, fmt.Sprintf("run %s was lost before it started (a restart): asked for again", e.RunID), now)
		}
		return nil
	} else if err != nil {
		return err
	}
	switch run.Run.Status {
	case store.StatusSucceeded:
		fleet.Ended(r, e.ID, true, "", now)
	case store.StatusFailed, store.StatusRefused:
		fleet.Ended(r, e.ID, false, failedWhy(run.Run), now)
	case store.StatusSuperseded, store.StatusInterrupted:
		return ro.replaced(ctx, r, e, run.Run, now)
	case store.StatusAwaiting:
		e.Message = fmt.Sprintf("run %s waits for a person's approval (knit approvals %s)", run.Run.ID, e.ID)
	}
	return nil
}

// replaced follows a run that another carries on: the apply an approval
// started, or the resume of a run a restart interrupted; a run replaced
// by anything else failed to bring the change.
func (ro *rollouts) replaced(ctx context.Context, r *view.WaveRollout, e *view.WaveEnv, run view.Run, now time.Time) error {
	g := ro.g
	next := run.SupersededBy
	if next == "" {
		last, err := knit.NewRecords(g.k).LastRun(ctx, e.ID)
		if err != nil {
			return err
		}
		if last != nil && last.ID != run.ID {
			next = last.ID
		}
	}
	if next != "" {
		by, err := g.k.RunRecord(ctx, next)
		if err != nil && !errors.Is(err, store.ErrNotFound) {
			return err
		}
		if err == nil && by.Run.Kind == engine.KindApply && by.Run.Revision == run.Revision {
			e.RunID = by.Run.ID
			return nil
		}
	}
	if run.Status == store.StatusInterrupted && ro.pendingFor(e.ID) {
		return nil // its resume waits in the queue
	}
	fleet.Ended(r, e.ID, false, fmt.Sprintf("run %s was %s and nothing carried its change on", run.ID, run.Status), now)
	return nil
}

func failedWhy(run view.Run) string {
	if run.Error == "" {
		return fmt.Sprintf("run %s %s", run.ID, run.Status)
	}
	return fmt.Sprintf("run %s %s: %s", run.ID, run.Status, firstLine(run.Error))
}

// inQueue reports whether the queue still holds run id (a queue that
// keeps its jobs across restarts, such as River's, does).
func (ro *rollouts) inQueue(id string) bool {
	g := ro.g
	q, ok := g.q.(interface{ Queued(string) (string, bool) })
	if !ok {
		return false
	}
	_, queued := q.Queued(id)
	return queued
}

func (ro *rollouts) pendingFor(env string) bool {
	g := ro.g
	q, ok := g.q.(interface{ PendingFor(string) bool })
	return ok && q.PendingFor(env)
}

// startWave queues the run of want for environment id of set's rollout
// and records it there; a run that does not start puts it back to
// waiting (and a lock held elsewhere is tried again after a while).
func (ro *rollouts) startWave(ctx context.Context, w *gitwatch.Watcher, set, id string, want gitWant) {
	g := ro.g
	key := set + "|" + id
	defer ro.runs.mark(&ro.runs.starting, key, false)
	req, err := wantRequest(ctx, g, w, id, want)
	if err != nil {
		ro.waveEnded(set, id, fmt.Sprintf("its change cannot be built: %v", err))
		return
	}
	var runID string
	known := make(chan struct{}) // onStart waits until the run's ID is known
	onStart := func(err error) {
		go func() {
			<-known
			ro.runs.mark(&ro.runs.queued, runID, false)
			if err != nil {
				ro.waveUnstarted(set, id, runID, err)
				return
			}
			g.wantDone(id, want)
		}()
	}
	runID, err = g.q.EnqueueWith(req, id, onStart)
	if err == nil {
		ro.runs.mark(&ro.runs.queued, runID, true)
	}
	close(known)
	if err != nil {
		ro.waveUnstarted(set, id, "", err)
		return
	}
	g.log.Info("git: queued in its wave", "set", set, "env", id, "commit", short(want.Commit), "run", runID)
	if _, err := ro.patchRollout(ctx, set, func(r *view.WaveRollout) error {
		if e := r.Env(id); e != nil && e.State == view.WaveEnvApplying && e.RunID == "" {
			e.RunID = runID
		}
		return nil
	}); err != nil {
		g.log.Error("git: record a rollout's run", "set", set, "env", id, "run", runID, "err", err)
	}
}

// waveUnstarted puts id back to waiting after its run did not start.
func (ro *rollouts) waveUnstarted(set, id, runID string, err error) {
	g := ro.g
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, perr := ro.patchRollout(ctx, set, func(r *view.WaveRollout) error {
		if e := r.Env(id); e != nil && e.State == view.WaveEnvApplying && (runID == "" || e.RunID == runID || e.RunID == "") {
			fleet.Unstarted(r, id, "its run did not start: "+err.Error(), g.clock.Now())
		}
		return nil
	}); perr != nil {
		g.log.Error("git: record a rollout's run that did not start", "set", set, "env", id, "err", perr)
	}
	if !g.stopping() {
		g.retryLater(firstRetry)
	}
}

// waveEnded records that id's change cannot be applied at all.
func (ro *rollouts) waveEnded(set, id, why string) {
	g := ro.g
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := ro.patchRollout(ctx, set, func(r *view.WaveRollout) error {
		fleet.Ended(r, id, false, why, g.clock.Now())
		return nil
	}); err != nil {
		g.log.Error("git: record a rollout's failure", "set", set, "env", id, "err", err)
	}
}

// wakeAt has the loop step the rollouts at t (a soak's end), once per t.
func (ro *rollouts) wakeAt(t time.Time) {
	g := ro.g
	if t.IsZero() {
		return
	}
	ro.runs.mu.Lock()
	same := ro.runs.wake.Equal(t)
	ro.runs.wake = t
	ro.runs.mu.Unlock()
	if !same {
		g.retryLater(max(t.Sub(g.clock.Now()), 0) + 10*time.Millisecond)
	}
}

func firstLine(s string) string {
	for i, c := range s {
		if c == '\n' {
			return s[:i]
		}
	}
	return s
}
