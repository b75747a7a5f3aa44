package e2e

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// TestADriftScheduleTellsOnlyOfChanges (issue 37 item 10): a drift check
// every second used to send run.succeeded every second. Now the webhook
// hears of drift once when it appears (drift.found), once when it goes
// (drift.resolved), and of nothing while the checks find what the one
// before found.
func TestADriftScheduleTellsOnlyOfChanges(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	var mu sync.Mutex
	var kinds []string
	hook := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		var b struct{ Kind, Env string }
		_ = json.NewDecoder(r.Body).Decode(&b)
		mu.Lock()
		kinds = append(kinds, b.Kind)
		mu.Unlock()
	}))
	t.Cleanup(hook.Close)
	heard := func(kind string) int {
		mu.Lock()
		defer mu.Unlock()
		n := 0
		for _, k := range kinds {
			if k == kind {
				n++
			}
		}
		return n
	}
	files := w.path("files")
	env := strings.Replace(envFile("watched", fileComp("tell", "tell", "      drift: {policy: alert}\n")),
		"  autoApprove: true\n", "  autoApprove: true\n  drift: {schedule: \"@every 1s\"}\n", 1)
	repo := newGitRepo(t, map[string]string{"envs/modules/file/main.tf": fileModule, "envs/watched.yaml": strings.ReplaceAll(env, "FILES", files)})
	s := w.startServer(gitServerArgs(repo, "--drift-min-every", "100ms", "--drift-tick", "100ms",
		"--config", w.notifyConfig("notify.yaml", hook.URL+"/hook"))...)
	drifts := func() int {
		var p struct{ Items []apiRun }
		s.do("GET", "/api/v1/environments/qa/watched/runs", nil, &p)
		n := 0
		for _, r := range p.Items {
			if r.Kind == "drift" && r.Status != "running" {
				n++
			}
		}
		return n
	}
	checks := func(what string, more int) {
		t.Helper()
		want := drifts() + more
		s.eventually(what, func() bool { return drifts() >= want })
	}
	s.eventually("applied, and its run.succeeded heard", func() bool { return heard("run.succeeded") == 1 })
	checks("three drift checks in sync", 3)

	if err := os.WriteFile(filepath.Join(files, "tell.txt"), []byte("edited"), 0o644); err != nil {
		t.Fatal(err)
	}
	s.eventually("drift.found heard", func() bool { return heard("drift.found") == 1 })
	checks("three drift checks finding the same drift", 3)

	if err := os.WriteFile(filepath.Join(files, "tell.txt"), []byte("tell"), 0o644); err != nil {
		t.Fatal(err)
	}
	s.eventually("drift.resolved heard", func() bool { return heard("drift.resolved") == 1 })
	checks("three drift checks in sync again", 3)
	mu.Lock()
	defer mu.Unlock()
	if strings.Join(kinds, " ") != "run.succeeded drift.found drift.resolved" {
		t.Errorf("the webhook heard %v, want run.succeeded (the apply), drift.found, drift.resolved", kinds)
	}
}
