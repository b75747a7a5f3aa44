// Package fleet is the rule book of an environment set's rollout in
// waves (spec.rollout.waves): which environments a change reaches first,
// when the next wave may start, when the rollout halts, and what an
// operator's resume, retry, skip or abort does. It decides on a
// view.WaveRollout and knows nothing of runs, git or the store: the GitOps
// reconciler carries its decisions out and records them, the library's
// fleet actions apply an operator's.
package fleet

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"knit.dev/knit/internal/spec"
	"knit.dev/knit/internal/view"
)

// New is the rollout of commit's change of set (team/name, from file) to
// members, in the waves w plans for them, starting at now.
func New(set, team, file, commit, reason string, w *spec.SetWaves, members []spec.WaveMember, now time.Time) *view.WaveRollout {
	r := &view.WaveRollout{Set: set, Team: team, File: file, Commit: commit, Reason: reason, Status: view.FleetRolling,
		MaxFailed: w.MaxFailed, MaxParallel: w.Parallel(len(members)), Soak: w.SoakEach, StartedAt: now, ChangedAt: now}
	labels := map[string]map[string]string{}
	for _, m := range members {
		labels[m.ID] = m.Labels
	}
	for i, pw := range w.Plan(members) {
		r.Waves = append(r.Waves, view.Wave{Step: pw.Step, IDs: pw.IDs, Note: pw.Note})
		for _, id := range pw.IDs {
			r.Envs = append(r.Envs, view.WaveEnv{ID: id, Labels: labels[id], Wave: i, State: view.WaveEnvWaiting})
		}
	}
	return r
}

// Next moves r past the waves that are done (every environment verified,
// failed within bounds or skipped, and soaked; or empty) and says which
// environments to apply now: the waiting ones of the waves reached, as
// many as MaxParallel allows beside those applying. wake, when not zero,
// is when a soak ends and Next should be asked again.
func Next(r *view.WaveRollout, now time.Time) (start []string, wake time.Time) {
	for r.Status == view.FleetRolling {
		if r.Wave >= len(r.Waves) {
			r.Status, r.ChangedAt = view.FleetDone, now
			return nil, time.Time{}
		}
		applying, waiting, last := 0, []string{}, time.Time{}
		for _, e := range r.Envs {
			switch {
			case e.Wave > r.Wave:
			case e.State == view.WaveEnvApplying:
				applying++
			case e.State == view.WaveEnvWaiting:
				waiting = append(waiting, e.ID)
			case e.Wave == r.Wave && e.ChangedAt.After(last):
				last = e.ChangedAt
			}
		}
		if len(waiting) > 0 || applying > 0 {
			n := max(r.MaxParallel-applying, 0)
			return waiting[:min(n, len(waiting))], time.Time{}
		}
		w := &r.Waves[r.Wave]
		if len(w.IDs) > 0 && !w.Skipped {
			if w.VerifiedAt.IsZero() {
				w.VerifiedAt = last
			}
			if end := w.VerifiedAt.Add(soak(r)); now.Before(end) {
				return nil, end
			}
		}
		r.Wave++
		r.ChangedAt = now
	}
	return nil, time.Time{}
}

func soak(r *view.WaveRollout) time.Duration {
	d, _ := time.ParseDuration(r.Soak)
	return d
}

// Started records that run runID applies environment id.
func Started(r *view.WaveRollout, id, runID string, now time.Time) {
	if e := r.Env(id); e != nil {
		e.State, e.RunID, e.Message, e.ChangedAt = view.WaveEnvApplying, runID, "", now
	}
}

// Unstarted puts environment id back to waiting: its run did not start
// (why), and it is asked for again.
func Unstarted(r *view.WaveRollout, id, why string, now time.Time) {
	if e := r.Env(id); e != nil {
		e.State, e.RunID, e.Message, e.ChangedAt = view.WaveEnvWaiting, "", why, now
	}
}

// Ended records the end of environment id's run: verified, or failed with
// msg. More failures than the rollout tolerates halt it.
func Ended(r *view.WaveRollout, id string, verified bool, msg string, now time.Time) {
	e := r.Env(id)
	if e == nil {
		return
	}
	e.State, e.Message, e.ChangedAt = view.WaveEnvVerified, msg, now
	if !verified {
		e.State = view.WaveEnvFailed
	}
	if r.Status == view.FleetRolling && r.Failed() > r.MaxFailed+r.Tolerated {
		r.Status, r.ChangedAt = view.FleetHalted, now
	}
}

// Operator actions on a rollout (Act).
const (
	ActResume = "resume" // a halted rollout goes on: the failures so far are accepted
	ActRetry  = "retry"  // the failed environments are applied again, in their turn
	ActSkip   = "skip"   // the current wave's waiting environments are passed over: they keep their release
	ActAbort  = "abort"  // the rollout ends: every environment not reached keeps its release
)

// Actions are the operator actions, in the order the CLI lists them.
var Actions = []string{ActResume, ActRetry, ActSkip, ActAbort}

// ErrNotNow is an action that does not apply to the rollout as it stands.
var ErrNotNow = errors.New("the rollout is not in a state this action applies to")

// Act applies an operator's action to r at now, saying what it did; an
// action that does not apply is ErrNotNow with why.
func Act(r *view.WaveRollout, action string, now time.Time) (string, error) {
	if !slices.Contains(Actions, action) {
		return "", fmt.Errorf("unknown action %q: use %s", action, strings.Join(Actions, ", "))
	}
	if r.Status == view.FleetDone || r.Status == view.FleetAborted {
		return "", fmt.Errorf("%w: the rollout of %s at %s is %s", ErrNotNow, r.Set, short(r.Commit), r.Status)
	}
	r.ChangedAt = now
	switch action {
	case ActResume:
		if r.Status != view.FleetHalted {
			return "", fmt.Errorf("%w: the rollout is %s, not halted", ErrNotNow, r.Status)
		}
		r.Tolerated = r.Failed() - r.MaxFailed
		r.Status = view.FleetRolling
		return fmt.Sprintf("resumed with %d failed environments accepted", r.Failed()), nil
	case ActRetry:
		var ids []string
		for i := range r.Envs {
			if e := &r.Envs[i]; e.State == view.WaveEnvFailed {
				e.State, e.RunID, e.Message, e.ChangedAt = view.WaveEnvWaiting, "", "retried by an operator", now
				ids = append(ids, e.ID)
			}
		}
		if len(ids) == 0 {
			return "", fmt.Errorf("%w: no environment of the rollout failed", ErrNotNow)
		}
		if r.Status == view.FleetHalted && r.Failed() <= r.MaxFailed+r.Tolerated {
			r.Status = view.FleetRolling
		}
		return "retrying " + strings.Join(ids, ", "), nil
	case ActSkip:
		return skipWave(r, now), nil
	}
	n := 0
	for i := range r.Envs {
		if e := &r.Envs[i]; e.State == view.WaveEnvWaiting {
			e.State, e.Message, e.ChangedAt = view.WaveEnvSkipped, "the rollout was aborted", now
			n++
		}
	}
	r.Status = view.FleetAborted
	return fmt.Sprintf("aborted: %d environments keep their release", n), nil
}

// skipWave passes over the current wave: its waiting environments keep
// their release, and its soak is not waited for.
func skipWave(r *view.WaveRollout, now time.Time) string {
	if r.Wave >= len(r.Waves) {
		return "no wave left to skip"
	}
	w := &r.Waves[r.Wave]
	w.Skipped = true
	n := 0
	for i := range r.Envs {
		if e := &r.Envs[i]; e.Wave == r.Wave && e.State == view.WaveEnvWaiting {
			e.State, e.Message, e.ChangedAt = view.WaveEnvSkipped, "its wave was skipped", now
			n++
		}
	}
	return fmt.Sprintf("skipped wave %d (%s): %d environments keep their release", r.Wave+1, w.Step, n)
}

// Why says why the rollout's next wave waits at now, or what it does.
func Why(r *view.WaveRollout, now time.Time) string {
	switch r.Status {
	case view.FleetDone:
		return "done: every wave is through"
	case view.FleetAborted:
		return "aborted: the environments not reached keep their release"
	case view.FleetHalted:
		return fmt.Sprintf("halted: %d environments failed, more than maxFailed %d allows; knit fleet resume|retry|abort %s",
			r.Failed(), r.MaxFailed+r.Tolerated, r.Set)
	}
	if r.Wave >= len(r.Waves) {
		return "the last wave is through"
	}
	w := r.Waves[r.Wave]
	applying, waiting := 0, 0
	for _, e := range r.Envs {
		if e.Wave <= r.Wave {
			switch e.State {
			case view.WaveEnvApplying:
				applying++
			case view.WaveEnvWaiting:
				waiting++
			}
		}
	}
	head := fmt.Sprintf("wave %d of %d (%s)", r.Wave+1, len(r.Waves), w.Step)
	switch {
	case applying > 0 || waiting > 0:
		return fmt.Sprintf("%s: %d applying, %d waiting (maxParallel %d); the next wave starts once these verified and soaked", head, applying, waiting, r.MaxParallel)
	case !w.VerifiedAt.IsZero() && now.Before(w.VerifiedAt.Add(soak(r))):
		return fmt.Sprintf("%s verified: soaking until %s", head, w.VerifiedAt.Add(soak(r)).UTC().Format(time.RFC3339))
	}
	return head + " is through"
}

func short(h string) string {
	if len(h) > 10 {
		return h[:10]
	}
	return h
}
