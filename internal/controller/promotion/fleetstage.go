package promotion

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"

	"knit.dev/knit/internal/fleet"
	"knit.dev/knit/internal/knit"
	"knit.dev/knit/internal/spec"
	"knit.dev/knit/internal/store"
	"knit.dev/knit/internal/view"
)

// A fleet stage (spec.StageFleet: a selector with waves instead of a
// file) rolls a release across every live environment of the pipeline's
// team whose metadata.labels the selector matches, in waves, by
// internal/fleet's rules and with the sets' rollout record
// (view.WaveRollout, ID spec.FleetID). The stage is Applying while its
// rollout rolls (Paused, with why, while it is halted), Succeeded once it
// is done, Failed once an operator aborted it. Each environment gets its
// own file as the release's commit declares it (fleetfiles.go) with the
// release's promote parameters, queued like any stage run; its health
// checks verify it and its own rollout.onFailure follows a failure.

// fleetStages is what the controller remembers of its fleet stages' runs:
// those it queued that have not started (a restart forgets them, and the
// environment is asked for again), and the environment files of the last
// commit read.
type fleetStages struct {
	c      *Controller
	mu     sync.Mutex
	queued map[string]bool
	files  envFiles
}

func (fs *fleetStages) mark(runID string, on bool) {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	if fs.queued == nil {
		fs.queued = map[string]bool{}
	}
	if on {
		fs.queued[runID] = true
	} else {
		delete(fs.queued, runID)
	}
}

func (fs *fleetStages) isQueued(runID string) bool {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	return fs.queued[runID]
}

// startFleet starts the rollout of release r into fleet stage i of
// pipeline f: its members are the live environments the selector matches
// now, planned into waves.
func (fs *fleetStages) startFleet(ctx context.Context, f *knit.PipelineFacts, i int, r view.ReleaseRecord) error {
	c := fs.c
	st, team, name := f.Def.Spec.Stages[i], f.Record.Team, f.Record.Name
	id := spec.FleetID(team, name, st.Name)
	live, err := knit.NewFleet(c.k).Live(ctx, team)
	if err != nil {
		return err
	}
	var members []spec.WaveMember
	for _, l := range live {
		if l.Team == team && st.Selector.Matches(l.Labels) {
			members = append(members, spec.WaveMember{ID: l.Team + "/" + l.Name, Labels: l.Labels})
		}
	}
	now := c.clock.Now()
	reason := fmt.Sprintf("pipeline %s: release %s to %s", name, r.ID, st.Name)
	ro := fleet.New(id, team, c.fileOf(name), r.Commit, reason, st.Waves, members, now)
	ro.Pipeline, ro.Stage, ro.Release = name, st.Name, r.ID
	for j := range ro.Envs {
		ro.Envs[j].Commit = r.Commit
	}
	old, ver, err := c.k.State().WaveRollout(ctx, id)
	if err != nil {
		return err
	}
	detail := fmt.Sprintf("release %s: %d environments matching %s in %d waves", r.ID, len(ro.Envs), st.Selector, len(ro.Waves))
	if old != nil && (old.Status == view.FleetRolling || old.Status == view.FleetHalted) {
		ro.Replaced = old.Commit
		detail += fmt.Sprintf("; supersedes the rollout of release %s (%s)", old.Release, old.Status)
	}
	audit := &store.AuditEvent{Env: id, Actor: c.cfg.Actor, Action: "fleet-rollout", Reason: reason, Detail: detail}
	if err := c.k.State().PutWaveRollout(ctx, ro, ver, audit); err != nil {
		return err
	}
	c.log.Info("pipelines: rolling in waves", "pipeline", name, "release", r.ID, "stage", st.Name, "detail", detail)
	s := view.StageState{Pipeline: name, Release: r.ID, Stage: st.Name, State: store.StageApplying, Actor: c.cfg.Actor, Message: fleet.Why(ro, now)}
	if err := c.k.SetStage(ctx, s, "", id); err != nil {
		return err
	}
	return fs.stepFleet(ctx, f, s)
}

// stepFleet moves the rollout of s's fleet stage on: it follows the runs
// of its environments, starts those fleet.Next asks for, and records the
// stage's end once the rollout has one.
func (fs *fleetStages) stepFleet(ctx context.Context, f *knit.PipelineFacts, s view.StageState) error {
	c := fs.c
	i := f.StageIndex(s.Stage)
	r := f.ReleaseByID(s.Release)
	id := spec.FleetID(f.Record.Team, f.Record.Name, s.Stage)
	if i < 0 || r == nil {
		return nil
	}
	var start []string
	ro, err := fs.patchFleet(ctx, id, func(ro *view.WaveRollout) error {
		now := c.clock.Now()
		for j := range ro.Envs {
			if e := &ro.Envs[j]; e.State == view.WaveEnvApplying {
				if err := fs.followFleetRun(ctx, ro, e); err != nil {
					return err
				}
			}
		}
		start, _ = fleet.Next(ro, now)
		for _, e := range start {
			fleet.Started(ro, e, "", now)
		}
		return nil
	})
	if err != nil || ro == nil {
		return err
	}
	if ro.Release != s.Release {
		return fs.endStage(ctx, s, id, store.StageFailed, fmt.Sprintf("its rollout was replaced by release %s's", ro.Release))
	}
	for _, env := range start {
		if err := fs.startFleetEnv(ctx, f, f.Def.Spec.Stages[i], *r, id, env); err != nil {
			return err
		}
	}
	return fs.fleetOutcome(ctx, s, id, ro)
}

// fleetOutcome records in the stage what the rollout ro came to.
func (fs *fleetStages) fleetOutcome(ctx context.Context, s view.StageState, id string, ro *view.WaveRollout) error {
	c := fs.c
	why := fleet.Why(ro, c.clock.Now())
	switch ro.Status {
	case view.FleetDone:
		return fs.endStage(ctx, s, id, store.StageSucceeded, fmt.Sprintf("%d environments verified, %d failed, %d skipped",
			countState(ro, view.WaveEnvVerified), ro.Failed(), countState(ro, view.WaveEnvSkipped)))
	case view.FleetAborted:
		return fs.endStage(ctx, s, id, store.StageFailed, why)
	}
	reason := ""
	if ro.Status == view.FleetHalted {
		reason = view.WaitPaused
	}
	if s.Reason == reason && s.Message == why {
		return nil
	}
	next := s
	next.Reason, next.Message, next.Actor, next.ChangedAt = reason, why, c.cfg.Actor, c.clock.Now()
	return ignoreConflict(c.k.SetStage(ctx, next, store.StageApplying, id))
}

// endStage records the end of s's rollout: state, with msg.
func (fs *fleetStages) endStage(ctx context.Context, s view.StageState, id, state, msg string) error {
	c := fs.c
	next := s
	next.State, next.Message, next.Actor, next.ChangedAt = state, msg, c.cfg.Actor, c.clock.Now()
	next.Reason = ""
	if state == store.StageSucceeded {
		next.VerifiedAt = next.ChangedAt
	} else {
		next.Reason = view.WaitApplyFailed
	}
	err := c.k.SetStage(ctx, next, store.StageApplying, id)
	if err == nil {
		c.tellEnded(next, id)
	}
	return ignoreConflict(err)
}

// followFleetRun records what became of the run applying e.
func (fs *fleetStages) followFleetRun(ctx context.Context, ro *view.WaveRollout, e *view.WaveEnv) error {
	c := fs.c
	now := c.clock.Now()
	if e.RunID == "" { // marked, never queued: the controller stopped between the two
		fleet.Unstarted(ro, e.ID, "its run was not queued before the server stopped: asked for again", now)
		return nil
	}
	run, err := c.k.RunRecord(ctx, e.RunID)
	if errors.Is(err, store.ErrNotFound) {
		if !fs.isQueued(e.RunID) && !fs.inQueue(e.RunID) {
			fleet.Unstarted(ro, e.ID, fmt.Sprintf("run %s was lost before it started (a restart): asked for again", e.RunID), now)
		}
		return nil
	} else if err != nil {
		return err
	}
	switch run.Run.Status {
	case store.StatusSucceeded:
		fleet.Ended(ro, e.ID, true, "", now)
	case store.StatusFailed, store.StatusRefused, store.StatusInterrupted:
		fleet.Ended(ro, e.ID, false, fmt.Sprintf("run %s %s: %s", run.Run.ID, run.Run.Status, firstLine(run.Run.Error)), now)
	case store.StatusSuperseded:
		by, ok, err := c.successor(ctx, run.Run)
		if err != nil {
			return err
		}
		if ok {
			e.RunID = by
			return nil
		}
		fleet.Ended(ro, e.ID, false, fmt.Sprintf("run %s was superseded and nothing carried the release on", run.Run.ID), now)
	case store.StatusAwaiting:
		e.Message = fmt.Sprintf("run %s waits for a person's approval (knit approvals %s)", run.Run.ID, e.ID)
	}
	return nil
}

// inQueue reports whether the queue still holds run id (River's keeps
// its jobs across restarts).
func (fs *fleetStages) inQueue(id string) bool {
	c := fs.c
	q, ok := c.q.(interface{ Queued(string) (string, bool) })
	if !ok {
		return false
	}
	_, queued := q.Queued(id)
	return queued
}

// startFleetEnv queues the run applying release r to environment env of
// fleet stage st and records it in the rollout id; a run that cannot be
// built fails env in its wave.
func (fs *fleetStages) startFleetEnv(ctx context.Context, f *knit.PipelineFacts, st spec.Stage, r view.ReleaseRecord, id, env string) error {
	c := fs.c
	req, berr := fs.fleetRun(ctx, f, st, r, env)
	if berr != nil {
		_, err := fs.patchFleet(ctx, id, func(ro *view.WaveRollout) error {
			fleet.Ended(ro, env, false, "its release cannot be built: "+berr.Error(), c.clock.Now())
			return nil
		})
		return err
	}
	runID, err := c.q.EnqueueWith(req, env, func(error) {})
	if err != nil {
		_, perr := fs.patchFleet(ctx, id, func(ro *view.WaveRollout) error {
			fleet.Unstarted(ro, env, "its run did not start: "+err.Error(), c.clock.Now())
			return nil
		})
		return perr
	}
	fs.mark(runID, true)
	c.log.Info("pipelines: applying in its wave", "pipeline", f.Record.Name, "release", r.ID, "stage", st.Name, "env", env, "run", runID)
	_, err = fs.patchFleet(ctx, id, func(ro *view.WaveRollout) error {
		if e := ro.Env(env); e != nil && e.State == view.WaveEnvApplying && e.RunID == "" {
			e.RunID = runID
		}
		return nil
	})
	return err
}

// patchFleet reads rollout id, lets fn change it and writes it back when
// it changed, over the version read (an operator's action meanwhile is
// read again and fn applied to it).
func (fs *fleetStages) patchFleet(ctx context.Context, id string, fn func(*view.WaveRollout) error) (*view.WaveRollout, error) {
	c := fs.c
	for try := 0; ; try++ {
		ro, ver, err := c.k.State().WaveRollout(ctx, id)
		if err != nil || ro == nil {
			return nil, err
		}
		before, _ := json.Marshal(ro) // plain values: cannot fail
		if err := fn(ro); err != nil {
			return nil, err
		}
		if after, _ := json.Marshal(ro); string(after) == string(before) {
			return ro, nil
		}
		err = c.k.State().PutWaveRollout(ctx, ro, ver, nil)
		if errors.Is(err, store.ErrConflict) && try < 5 {
			continue
		}
		return ro, err
	}
}

func countState(ro *view.WaveRollout, state string) int {
	n := 0
	for _, e := range ro.Envs {
		if e.State == state {
			n++
		}
	}
	return n
}

func ignoreConflict(err error) error {
	if errors.Is(err, store.ErrConflict) {
		return nil
	}
	return err
}
