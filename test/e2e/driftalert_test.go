package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestScheduledAlertDriftLeavesTheEnvironmentDrifted: a scheduled drift
// check of an environment whose one component is policy: alert finds a
// real file edited out of band, leaves it edited, and leaves the
// environment drifted (not applied); the audit trail calls each check a
// drift-check, never a reconcile.
func TestScheduledAlertDriftLeavesTheEnvironmentDrifted(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	files := w.path("files")
	env := strings.Replace(envFile("sched", fileComp("tell", "tell", "      drift: {policy: alert}\n")),
		"  autoApprove: true\n", "  autoApprove: true\n  drift: {schedule: \"@every 1s\"}\n", 1)
	repo := newGitRepo(t, map[string]string{"envs/modules/file/main.tf": fileModule, "envs/sched.yaml": strings.ReplaceAll(env, "FILES", files)})
	s := w.startServer("--git-url", "file://"+repo.bare, "--git-path", "envs/", "--git-poll", "200ms",
		"--drift-min-every", "100ms", "--drift-tick", "100ms")
	s.eventually("applied", func() bool { e, _ := s.env("qa/sched"); return e.Status == "provisioned" })
	if err := os.WriteFile(filepath.Join(files, "tell.txt"), []byte("edited"), 0o644); err != nil {
		t.Fatal(err)
	}
	s.eventually("the environment is drifted", func() bool { e, _ := s.env("qa/sched"); return e.Status == "drifted" })
	if got := w.read("files/tell.txt"); got != "edited" {
		t.Fatalf("an alert-only drift check changed the file: %q", got)
	}
	var page struct {
		Items []struct{ Action, RunID string }
	}
	if code := s.do("GET", "/api/v1/audit?env=qa/sched&limit=500", nil, &page); code != 200 {
		t.Fatalf("audit: %d", code)
	}
	var actions []string
	checks := 0
	for _, e := range page.Items {
		actions = append(actions, e.Action)
		if e.Action == "reconcile" {
			t.Errorf("an alert-only drift check is audited as a reconcile (run %s)", e.RunID)
		}
		if e.Action == "drift-check" {
			checks++
		}
	}
	if checks == 0 {
		t.Fatalf("no drift-check in the audit trail: %s", fmt.Sprint(actions))
	}
}
