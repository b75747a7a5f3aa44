package e2e

import (
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// killHeld kills (SIGKILL) the tofu wrapper that waits in env's held
// apply: a kill -9 of knit serve leaves its tool behind, and this one
// must not go on to apply for a server that is gone.
func (w *world) killHeld(env string) {
	w.t.Helper()
	pid, err := strconv.Atoi(strings.TrimSpace(w.read("marks/held-" + env)))
	if err != nil {
		w.t.Fatalf("held-%s: %v", env, err)
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil && err != syscall.ESRCH {
		w.t.Fatal(err)
	}
	if err := os.Remove(w.path("marks/held-" + env)); err != nil {
		w.t.Fatal(err)
	}
}

const crashWaves = `      steps: [{selector: {matchLabels: {upgrade_testing: "true"}}}, {percent: 50}, {percent: 100}]
      maxFailed: 0
      maxParallel: 1`

// Issue 41 item 3, restart: kill -9 of knit serve while the second of
// three waves applies (c02's apply held by the tofu wrapper). Restarted,
// the rollout is at the same wave, and goes on: every environment
// applies release 2 exactly once, wave by wave (c05; then c01 to c03;
// then the rest), none of the last wave before the second verified.
func TestAWaveRolloutKilledMidWaveGoesOnAtTheSameWave(t *testing.T) {
	t.Parallel()
	w, s, repo, _ := waveWorld(t, 8, crashWaves, 5)
	w.hold("c02")
	repo.commit("fleet: release 2", map[string]string{"envs/fleet.yaml": waveSet(8, "2", crashWaves, 5)})
	s.eventually("c02 applies release 2, held", func() bool { return w.heldNow("c02") })
	before := w.fleet(s)
	if before.Rollout == nil || before.Rollout.Wave != 1 || before.state("c02") != "applying" {
		t.Fatalf("before the kill: %+v", before)
	}
	s.kill9()
	w.killHeld("c02")
	w.unhold("c02")

	s = w.startServerWithToken(s.token, gitServerArgs(repo)...)
	var f fleetJSON
	s.eventually("the rollout ends", func() bool {
		f = w.fleet(s)
		return f.Rollout != nil && f.Rollout.Status != "rolling"
	})
	if f.Rollout.Status != "done" || f.Rollout.Wave < 1 {
		t.Fatalf("the rollout after the restart: %+v\nserver log:\n%s", f.Rollout, s.log)
	}
	applied := w.applies()
	if len(applied) != 8 || strings.Join(applied[:4], " ") != "c05 c01 c02 c03" {
		t.Fatalf("tofu applied %v, want c05 c01 c02 c03 then the last wave, each once", applied)
	}
	last := slices.Clone(applied[4:])
	slices.Sort(last)
	if strings.Join(last, " ") != "c04 c06 c07 c08" {
		t.Errorf("the last wave applied %v, want c04 c06 c07 c08 once each", applied[4:])
	}
	for i := 1; i <= 8; i++ {
		if got := w.appRelease(fmt.Sprintf("c%02d", i)); got != "2" {
			t.Errorf("c%02d runs release %s, want 2", i, got)
		}
	}
}
