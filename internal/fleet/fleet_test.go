package fleet

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"knit.dev/knit/internal/spec"
	"knit.dev/knit/internal/view"
)

var t0 = time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)

func twelve(w *spec.SetWaves) *view.WaveRollout {
	var ms []spec.WaveMember
	for i := 1; i <= 12; i++ {
		m := spec.WaveMember{ID: fmt.Sprintf("shop/c%02d", i)}
		if i == 5 {
			m.Labels = map[string]string{"upgrade_testing": "true"}
		}
		ms = append(ms, m)
	}
	return New("shop/fleet", "shop", "envs/fleet.yaml", "c0ffee", "commit", w, ms, t0)
}

func steps() *spec.SetWaves {
	return &spec.SetWaves{Steps: []spec.WaveStep{{Selector: &spec.Selector{MatchLabels: map[string]string{"upgrade_testing": "true"}}},
		{Percent: 25}, {Percent: 100}}, WavePolicy: spec.WavePolicy{MaxFailed: 1, MaxParallel: "1", SoakEach: "10m"}}
}

// The acceptance's rollout, decided step by step: the labelled one
// alone, then two more, one of which fails (tolerated), then one at a
// time until a second failure halts; the rest never start.
func TestAWaveStartsWhenThePreviousVerifiedAndSoakedAndTwoFailuresHalt(t *testing.T) {
	r := twelve(steps())
	now := t0
	start, _ := Next(r, now)
	if strings.Join(start, ",") != "shop/c05" {
		t.Fatalf("first wave starts %v", start)
	}
	Started(r, "shop/c05", "run1", now)
	if more, _ := Next(r, now); len(more) != 0 {
		t.Fatalf("started %v beside a run in the first wave", more)
	}
	now = now.Add(time.Minute)
	Ended(r, "shop/c05", true, "", now)
	start, wake := Next(r, now)
	if len(start) != 0 || !wake.Equal(now.Add(10*time.Minute)) || !strings.Contains(Why(r, now), "soaking until") {
		t.Fatalf("before the soak ended: start %v wake %v why %q", start, wake, Why(r, now))
	}
	now = wake
	start, _ = Next(r, now)
	if strings.Join(start, ",") != "shop/c01" || r.Wave != 1 {
		t.Fatalf("second wave starts %v (wave %d)", start, r.Wave)
	}
	Started(r, "shop/c01", "run2", now)
	Ended(r, "shop/c01", true, "", now)
	start, _ = Next(r, now)
	if strings.Join(start, ",") != "shop/c02" {
		t.Fatalf("then %v", start)
	}
	Started(r, "shop/c02", "run3", now)
	Ended(r, "shop/c02", false, "verification failed", now)
	if r.Status != view.FleetRolling {
		t.Fatalf("one failure of maxFailed 1 halted it")
	}
	now = now.Add(10 * time.Minute)
	start, _ = Next(r, now)
	if strings.Join(start, ",") != "shop/c03" || r.Wave != 2 {
		t.Fatalf("third wave starts %v (wave %d)", start, r.Wave)
	}
	Started(r, "shop/c03", "run4", now)
	Ended(r, "shop/c03", false, "verification failed", now)
	if start, _ := Next(r, now); r.Status != view.FleetHalted || len(start) != 0 {
		t.Fatalf("after a second failure: %s, starting %v", r.Status, start)
	}
	if why := Why(r, now); !strings.Contains(why, "halted: 2 environments failed") {
		t.Errorf("why: %q", why)
	}
	waiting := 0
	for _, e := range r.Envs {
		if e.State == view.WaveEnvWaiting {
			waiting++
		}
	}
	if waiting != 8 {
		t.Errorf("%d environments still waiting, want 8", waiting)
	}
	// resume accepts both failures; the next one halts again.
	if _, err := Act(r, ActResume, now); err != nil || r.Status != view.FleetRolling {
		t.Fatalf("resume: %v %s", err, r.Status)
	}
	start, _ = Next(r, now)
	Started(r, start[0], "run5", now)
	Ended(r, start[0], false, "", now)
	if r.Status != view.FleetHalted {
		t.Errorf("a failure after a resume: %s", r.Status)
	}
}

func TestOperatorActions(t *testing.T) {
	r := twelve(steps())
	if _, err := Act(r, ActResume, t0); !errors.Is(err, ErrNotNow) {
		t.Errorf("resume of a rolling rollout: %v", err)
	}
	if _, err := Act(r, "rewind", t0); err == nil || !strings.Contains(err.Error(), "resume, retry, skip, abort") {
		t.Errorf("an unknown action: %v", err)
	}
	msg, err := Act(r, ActSkip, t0)
	if err != nil || !strings.Contains(msg, "skipped wave 1") {
		t.Fatalf("skip: %q %v", msg, err)
	}
	if start, _ := Next(r, t0); r.Wave != 1 || strings.Join(start, ",") != "shop/c01" {
		t.Fatalf("after a skip: wave %d, starting %v", r.Wave, start)
	}
	if r.Env("shop/c05").State != view.WaveEnvSkipped {
		t.Errorf("the skipped wave's environment is %s", r.Env("shop/c05").State)
	}
	Started(r, "shop/c01", "run1", t0)
	Ended(r, "shop/c01", false, "", t0)
	if msg, err := Act(r, ActRetry, t0); err != nil || !strings.Contains(msg, "shop/c01") || r.Env("shop/c01").State != view.WaveEnvWaiting {
		t.Fatalf("retry: %q %v", msg, err)
	}
	msg, err = Act(r, ActAbort, t0)
	if err != nil || r.Status != view.FleetAborted || !strings.Contains(msg, "11 environments keep") {
		t.Fatalf("abort: %q %v %s", msg, err, r.Status)
	}
	if _, err := Act(r, ActSkip, t0); !errors.Is(err, ErrNotNow) {
		t.Errorf("skip after abort: %v", err)
	}
	if start, _ := Next(r, t0); len(start) != 0 {
		t.Errorf("an aborted rollout starts %v", start)
	}
}

// A selector that matches nobody is an empty wave, passed at once, and
// maxParallel as a percentage rounds up.
func TestEmptyWavesArePassedAndParallelRoundsUp(t *testing.T) {
	w := steps()
	w.Steps[0].Selector.MatchLabels = map[string]string{"nobody": "here"}
	w.MaxParallel = "25%"
	r := twelve(w)
	start, _ := Next(r, t0)
	if r.Wave != 1 || len(start) != 3 || r.MaxParallel != 3 {
		t.Fatalf("wave %d, starting %v, maxParallel %d", r.Wave, start, r.MaxParallel)
	}
	if !strings.Contains(r.Waves[0].Note, "matches none of the 12") {
		t.Errorf("the empty wave's note: %q", r.Waves[0].Note)
	}
}
