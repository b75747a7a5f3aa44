package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"knit.dev/knit/internal/store"
	"knit.dev/knit/internal/testtools/routertest"
)

// rolloutRecord is env's rollout as the store keeps it: its record and
// the detail the library writes (where it is, its pause, its evidence).
type rolloutRecord struct {
	store.Rollout
	Current *struct {
		Phase string
		Step  int
	}
	PauseUntil time.Time
	Evidence   []struct {
		Phase, Status string
		Step, Weight  int
	}
}

func readRollout(t *testing.T, st store.Store, env string) (rolloutRecord, bool) {
	t.Helper()
	rec, err := st.Rollout(context.Background(), env)
	if errors.Is(err, store.ErrNotFound) {
		return rolloutRecord{}, false
	}
	if err != nil {
		t.Fatal(err)
	}
	r := rolloutRecord{Rollout: rec}
	if err := json.Unmarshal([]byte(rec.Detail), &r); err != nil {
		t.Fatalf("the rollout's detail: %v\n%s", err, rec.Detail)
	}
	return r, true
}

// exampleRepo is a git repository holding the world's copy of the canary
// example under envs/canary-nginx/ (knit serve --git-path envs/).
func exampleRepo(t *testing.T, w *world) *gitRepo {
	t.Helper()
	files := map[string]string{}
	root := w.path("canary-nginx")
	err := filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, err := filepath.Rel(root, p)
		if err != nil {
			return err
		}
		files["envs/canary-nginx/"+rel] = w.read(filepath.Join("canary-nginx", rel))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return newGitRepo(t, files)
}

// kill9 kills s's process (SIGKILL) and waits for it.
func (s *server) kill9() {
	s.t.Helper()
	if err := s.cmd.Process.Kill(); err != nil {
		s.t.Fatal(err)
	}
	_ = s.cmd.Wait()
}

// TestCanaryKilledServerResumesAtTheSameStepAndWeight: knit serve rolls
// v2 of the canary example out from a commit (10 → pause 20s → analysis
// → 50 → 100) under load through nginx. kill -9 of the server during the
// pause, then again while the analysis after it runs: after each restart
// the store's rollout is at the step and weight it was killed at, nginx
// sends v2 10 % (± 5) of the requests started after the restart, no run
// went above 10 before the analysis passed, and the rollout then goes on
// to the end (v2 everywhere, the canary gone).
func TestCanaryKilledServerResumesAtTheSameStepAndWeight(t *testing.T) {
	t.Parallel()
	gates := t.TempDir()
	steps := "          - setWeight: 10\n          - pause: {duration: 20s}\n          - analysis:\n" + promAnalysis("2s") + gate(gates, 10) +
		"          - setWeight: 50\n          - setWeight: 100\n"
	w, _, file := canaryExample(t, steps)
	repo := exampleRepo(t, w)
	first := git(t, repo.work, "rev-parse", "HEAD")
	args := gitServerArgs(repo)
	s := w.startServer(args...)
	s.eventually("v1 applied (a plain apply)", func() bool { return s.appliedFrom(exampleEnv, first) })
	load := routertest.StartLoad(t, w.output(exampleEnv, "router", "url"), routertest.LoadOptions{Workers: 2, Gap: 5 * time.Millisecond})
	st := w.openStore()
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("history:\n%s\n%s", w.knit("history", exampleEnv).stdout, w.knit("rollout", "status", exampleEnv).stdout)
		}
	})

	w.setApp(file, "v2", 0)
	repo.commit("app: v2", map[string]string{"envs/canary-nginx/environment.yaml": w.read(file)})
	var paused rolloutRecord
	s.eventually("the rollout pauses after weight 10", func() bool {
		r, ok := readRollout(t, st, exampleEnv)
		paused = r
		return ok && r.Current == nil && !r.PauseUntil.IsZero()
	})
	s.kill9()
	if r, _ := readRollout(t, st, exampleEnv); r.Step != 1 || r.Weight != 10 || r.State != "running" {
		t.Fatalf("killed during the pause: the rollout is at step %d, weight %d, %s, want step 1 (the pause), weight 10", r.Step, r.Weight, r.State)
	}

	// Restarted, the server waits the pause out and runs the analysis
	// (step 2) at weight 10: its gate holds it there.
	s = w.startServerWithToken(s.token, args...)
	at10 := filepath.Join(gates, "at-10")
	atGate := func(what string) {
		t.Helper()
		s.eventually(what, func() bool { _, err := os.Stat(at10); return err == nil })
		r, _ := readRollout(t, st, exampleEnv)
		if r.Step != 2 || r.Weight != 10 || r.Current == nil || r.Current.Phase != "step" || r.Current.Step != 2 {
			t.Fatalf("%s: the rollout is at step %d, weight %d (%+v), want the analysis (step 2) at weight 10", what, r.Step, r.Weight, r.Current)
		}
		mark := load.Mark()
		shareNear(t, what, load.Await(t, mark, 300), 10)
		for _, e := range r.Evidence {
			if e.Weight > 10 {
				t.Fatalf("%s: a run at weight %d before the analysis passed: %+v", what, e.Weight, r.Evidence)
			}
		}
	}
	atGate("the analysis after the restart")
	if r, _ := readRollout(t, st, exampleEnv); !r.PauseUntil.IsZero() && r.PauseUntil != paused.PauseUntil {
		t.Errorf("the pause moved: until %s, was %s", r.PauseUntil, paused.PauseUntil)
	}

	// Killed again mid-analysis: the restarted server resumes the step
	// at weight 10, not the next one.
	s.kill9()
	if err := os.Remove(at10); err != nil {
		t.Fatal(err)
	}
	s = w.startServerWithToken(s.token, args...)
	atGate("the analysis resumed after the second kill")
	if err := os.WriteFile(filepath.Join(gates, "go-10"), nil, 0o644); err != nil {
		t.Fatal(err)
	}

	var end rolloutRecord
	s.eventually("the rollout ends", func() bool {
		end, _ = readRollout(t, st, exampleEnv)
		return end.State == "succeeded" || end.State == "aborted" || end.State == "failed"
	})
	var runs []string
	for _, e := range end.Evidence {
		runs = append(runs, fmt.Sprintf("%s/%d@%d:%s", e.Phase, e.Step, e.Weight, e.Status))
	}
	if end.State != "succeeded" {
		t.Fatalf("the rollout ended %s: %v\n%s", end.State, runs, s.log)
	}
	t.Logf("the rollout's runs: %v", runs)
	mark := load.Mark()
	if c := load.Await(t, mark, 200); c.Share("v2") != 100 {
		t.Errorf("after the rollout: %+v, want every request on v2", c)
	}
	if stt := w.ok("status", exampleEnv).stdout; strings.Contains(stt, "app-canary") {
		t.Errorf("the canary instance is left:\n%s", stt)
	}
}
