package gitops

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"sort"
	"sync"
	"time"

	"knit.dev/knit/internal/fleet"
	"knit.dev/knit/internal/gitwatch"
	"knit.dev/knit/internal/spec"
	"knit.dev/knit/internal/store"
	"knit.dev/knit/internal/view"
)

// An environment set with spec.rollout.waves rolls a change of its
// template wave by wave (internal/fleet has the rules). recordCommit
// holds the wants of such a set's environments that have a release
// (gitWant.Wave); the wave step here keeps the set's rollout in the store
// current with them, follows the runs of its environments, and starts,
// through the run queue and so the library's one door, the runs fleet.Next
// asks for. The environments no wave reached are never applied: their
// wants stay held. A newer change of the set supersedes the rollout: a new
// one starts from the first wave over every environment still waiting.

// rollouts steps the sets' rollouts in waves for the reconciler g: nudge
// asks its loop for a step, mu serialises steps, runs are what this
// process knows of their runs.
type rollouts struct {
	g     *Reconciler
	nudge chan struct{}
	mu    sync.Mutex
	runs  waveRuns
}

// waveRuns is what this process remembers of the rollouts' runs: the
// environments whose run it is queueing (set/env), the runs it queued
// that have not started, and the soak end it set a timer for.
type waveRuns struct {
	mu       sync.Mutex
	starting map[string]bool
	queued   map[string]bool
	wake     time.Time
}

func (r *waveRuns) mark(m *map[string]bool, key string, on bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if *m == nil {
		*m = map[string]bool{}
	}
	if on {
		(*m)[key] = true
	} else {
		delete(*m, key)
	}
}

func (r *waveRuns) has(m map[string]bool, key string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return m[key]
}

// WakeWaves asks the reconciler to step its rollouts now: a run ended, or
// an operator acted on a rollout.
func (g *Reconciler) WakeWaves() {
	select {
	case g.waves.nudge <- struct{}{}:
	default:
	}
}

// setWants are the wants a set's rollout applies, by environment, and
// which of them still wait (pending).
type setWants struct {
	all, pending map[string]gitWant
}

// stepWaves steps every set that has held wants or a rollout going on.
func (ro *rollouts) stepWaves(ctx context.Context, w *gitwatch.Watcher) {
	g := ro.g
	ro.mu.Lock()
	defer ro.mu.Unlock()
	g.mu.Lock()
	m, err := g.state(ctx)
	bySet := map[string]setWants{}
	if err == nil {
		for id, want := range m.wants {
			if want.Wave == "" || want.Teardown {
				continue
			}
			sw, ok := bySet[want.Wave]
			if !ok {
				sw = setWants{all: map[string]gitWant{}, pending: map[string]gitWant{}}
				bySet[want.Wave] = sw
			}
			sw.all[id] = want
			if want.Pending {
				sw.pending[id] = want
			}
		}
	}
	last := ""
	if err == nil {
		last = m.commit
	}
	g.mu.Unlock()
	if err != nil {
		g.log.Error("git: read the wants of the rollouts", "err", err)
		return
	}
	ids, err := g.k.State().WaveRolloutIDs(ctx)
	if err != nil {
		g.log.Error("git: read the rollouts", "err", err)
		return
	}
	for _, id := range ids {
		if _, ok := bySet[id]; !ok {
			bySet[id] = setWants{}
		}
	}
	for set, sw := range bySet {
		if err := ro.stepSet(ctx, w, set, sw, last); err != nil && ctx.Err() == nil {
			g.log.Error("git: step the rollout", "set", set, "err", err)
		}
	}
}

// stepSet keeps set's rollout current with its wants, then moves it on.
func (ro *rollouts) stepSet(ctx context.Context, w *gitwatch.Watcher, set string, sw setWants, last string) error {
	g := ro.g
	r, ver, err := g.k.State().WaveRollout(ctx, set)
	if err != nil || r != nil && r.Pipeline != "" { // a pipeline's fleet stage: the promotion controller's
		return err
	}
	if stale(r, sw.pending) {
		if r, err = ro.newRollout(ctx, w, set, sw.pending, r, ver, last); err != nil || r == nil {
			return err
		}
	}
	if r == nil {
		return nil
	}
	if err := ro.dropUnreached(r, sw.pending); err != nil {
		return err
	}
	if r.Status != view.FleetRolling && r.Status != view.FleetHalted {
		return nil
	}
	start, wake, err := ro.advance(ctx, set, sw.all)
	if err != nil {
		return err
	}
	for _, id := range start {
		ro.startWave(ctx, w, set, id, sw.all[id])
	}
	ro.wakeAt(wake)
	return nil
}

// stale reports whether pending wants are not those r waits for: a newer
// change of the set (or its first) needs a rollout of its own.
func stale(r *view.WaveRollout, pending map[string]gitWant) bool {
	for id, want := range pending {
		if r == nil {
			return true
		}
		e := r.Env(id)
		if e == nil || e.Commit != want.Commit || e.State != view.WaveEnvWaiting && e.State != view.WaveEnvApplying && e.State != view.WaveEnvSkipped {
			return true
		}
	}
	return false
}

// newRollout records the rollout of the set's pending wants, replacing
// old: their waves, as the set's file at the newest commit plans them.
func (ro *rollouts) newRollout(ctx context.Context, w *gitwatch.Watcher, set string, pending map[string]gitWant, old *view.WaveRollout, ver int64, last string) (*view.WaveRollout, error) {
	g := ro.g
	var newest gitWant
	ids := make([]string, 0, len(pending))
	for id, want := range pending {
		ids = append(ids, id)
		if newest.Commit == "" || want.Commit == last {
			newest = want
		}
	}
	sort.Strings(ids)
	s, err := ro.setAt(ctx, w, newest)
	if err != nil {
		return nil, err
	}
	waves, team := s.Waves(), s.TeamName
	if waves == nil {
		return nil, ro.releaseWants(pending, "the set rolls its changes in waves no more")
	}
	members := make([]spec.WaveMember, 0, len(ids))
	for _, id := range ids {
		labels, _ := s.ElementLabels(*pending[id].Element) // it validated when its want was recorded
		members = append(members, spec.WaveMember{ID: id, Labels: labels})
	}
	now := g.clock.Now()
	r := fleet.New(set, team, newest.Path, newest.Commit, newest.Reason, waves, members, now)
	for i := range r.Envs {
		r.Envs[i].Commit = pending[r.Envs[i].ID].Commit
	}
	detail := fmt.Sprintf("%d environments in %d waves", len(r.Envs), len(r.Waves))
	if old != nil && (old.Status == view.FleetRolling || old.Status == view.FleetHalted) {
		r.Replaced = old.Commit
		detail += fmt.Sprintf("; supersedes the rollout of %s (%s), whose waiting environments get this change instead", short(old.Commit), old.Status)
	}
	audit := &store.AuditEvent{Env: set, Actor: g.cfg.Actor, Action: "fleet-rollout", Reason: newest.Reason, Detail: detail}
	if err := g.k.State().PutWaveRollout(ctx, r, ver, audit); err != nil {
		return nil, err
	}
	g.log.Info("git: rolling out in waves", "set", set, "commit", short(r.Commit), "detail", detail)
	return r, nil
}

// setAt is the set file want comes from, at its commit.
func (ro *rollouts) setAt(ctx context.Context, w *gitwatch.Watcher, want gitWant) (*spec.Set, error) {
	g := ro.g
	dir, err := w.Checkout(ctx, want.Commit)
	if err != nil {
		return nil, err
	}
	content, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(want.Path)))
	if err != nil {
		return nil, err
	}
	folder := filepath.Join(dir, filepath.FromSlash(path.Dir(want.Path)))
	s, diags := spec.ParseSet(want.Path, folder, dir, content, g.cfg.Spec.InRepo(dir))
	if diags.HasErrors() {
		return nil, errors.New(diags.String())
	}
	return s, nil
}

// releaseWants lets reconcileWants apply the pending wants at once.
func (ro *rollouts) releaseWants(pending map[string]gitWant, why string) error {
	return ro.rewriteWants(pending, func(want *gitWant) { want.Wave = "" }, why)
}

// dropUnreached marks the pending wants of r's skipped environments (a
// skipped wave, an aborted rollout) done: they keep their release.
func (ro *rollouts) dropUnreached(r *view.WaveRollout, pending map[string]gitWant) error {
	drop := map[string]gitWant{}
	for id, want := range pending {
		if e := r.Env(id); e != nil && e.State == view.WaveEnvSkipped && e.Commit == want.Commit {
			drop[id] = want
		}
	}
	return ro.rewriteWants(drop, func(want *gitWant) { want.Pending = false }, "skipped in the rollout")
}

// rewriteWants changes each of wants that is still as read, in one write.
func (ro *rollouts) rewriteWants(wants map[string]gitWant, fn func(*gitWant), why string) error {
	g := ro.g
	if len(wants) == 0 {
		return nil
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	m, err := g.state(ctx)
	if err != nil {
		return err
	}
	kv := map[string]string{}
	for id, want := range wants {
		if cur, ok := m.wants[id]; ok && cur.same(want) {
			fn(&cur)
			kv[settingWant+id] = encodeWant(cur)
			g.log.Info("git: "+why, "env", id, "commit", short(want.Commit))
		}
	}
	return g.memo.write(ctx, g.k, kv)
}
