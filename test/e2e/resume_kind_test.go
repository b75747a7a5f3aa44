package e2e

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// Issue 35 item 10: what an interrupted run resumes as is one rule
// (knit.ResumeKind), the same on SQLite and on PostgreSQL replicas.

// historyRun is a run as knit history -o json lists it.
type historyRun struct {
	ID     string `json:"id"`
	Kind   string `json:"kind"`
	Status string `json:"status"`
	Source string `json:"source"`
}

// TestServerKilledMidDriftCheckResumesItAsADriftCheck: kill -9 of a
// SQLite knit serve during a drift check: the restarted server resumes
// it as a drift check (it resumed it as an apply).
func TestServerKilledMidDriftCheckResumesItAsADriftCheck(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	out := w.path("out")
	if err := os.MkdirAll(out, 0o755); err != nil {
		t.Fatal(err)
	}
	w.write(map[string]string{"env.yaml": `apiVersion: knit.dev/v1
kind: Environment
metadata: {name: watched}
spec:
  teamName: qa
  envName: watched
  autoApprove: true
  components:
    - name: app
      type: script
      script:
        plan: |
          if [ -f ` + out + `/block ]; then
            echo checking >> ` + out + `/drifting
            while [ ! -f ` + out + `/go ]; do sleep 0.1; done
          fi
          exit 0
        apply: echo applied >> ` + out + `/applied
`})
	w.ok("apply", "-f", "env.yaml", "--auto-approve")
	if err := os.WriteFile(filepath.Join(out, "block"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	s := w.startServer()
	if code := s.do("POST", "/api/v1/environments/qa/watched/runs", map[string]any{"kind": "drift"}, nil); code != http.StatusAccepted {
		t.Fatalf("start a drift check: %d", code)
	}
	waitFor(t, 2*time.Minute, func() bool { return len(lines(t, filepath.Join(out, "drifting"))) >= 1 })
	if err := s.cmd.Process.Kill(); err != nil { // kill -9, mid-check
		t.Fatal(err)
	}
	_ = s.cmd.Wait()
	if err := os.Remove(filepath.Join(out, "block")); err != nil {
		t.Fatal(err)
	}
	appliedBefore := len(lines(t, filepath.Join(out, "applied")))

	s2 := w.startServerWithToken(s.token)
	var runs []historyRun
	s2.eventually("the interrupted drift check resumed and ended", func() bool {
		if err := json.Unmarshal([]byte(w.ok("history", "qa/watched", "-o", "json").stdout), &runs); err != nil {
			var page struct{ Items []historyRun }
			if json.Unmarshal([]byte(w.ok("history", "qa/watched", "-o", "json").stdout), &page) != nil {
				t.Fatalf("history: %v", err)
			}
			runs = page.Items
		}
		return len(runs) > 0 && runs[0].Source == "recovery" && runs[0].Status != "running"
	})
	if runs[0].Kind != "drift" || runs[0].Status != "succeeded" {
		t.Errorf("the resume of a drift check: %+v, want a drift check that succeeded\nhistory: %+v", runs[0], runs)
	}
	if len(runs) < 2 || runs[1].Kind != "drift" || runs[1].Status != "interrupted" {
		t.Errorf("the killed drift check: %+v, want drift interrupted", runs[1:])
	}
	if n := len(lines(t, filepath.Join(out, "applied"))); n != appliedBefore {
		t.Errorf("the component was applied %d more times after the kill, want none", n-appliedBefore)
	}
}

// TestReplicaKilledMidRollbackIsResumed: on PostgreSQL replicas, kill -9
// of the replica running a rollback: the leader resumes it (it was never
// resumed) as a rollback to the revision it recorded (revision 1's spec).
func TestReplicaKilledMidRollbackIsResumed(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	out := w.path("out")
	if err := os.MkdirAll(out, 0o755); err != nil {
		t.Fatal(err)
	}
	version := func(v string, apply string) string {
		return `apiVersion: knit.dev/v1
kind: Environment
metadata: {name: roll}
spec:
  teamName: fleet
  envName: roll
  autoApprove: true
  components:
    - name: app
      type: script
      script:
        apply: |
          # ` + v + `
` + indent(apply, "          ") + "\n"
	}
	v1 := version("v1", `if [ -f `+out+`/block ]; then
  echo $REPLICA_NAME >> `+out+`/rolling
  while [ ! -f `+out+`/go ]; do sleep 0.1; done
fi
echo v1 >> `+out+`/applied`)
	v2 := version("v2", `echo v2 >> `+out+`/applied`)
	repo := newGitRepo(t, map[string]string{"envs/README": "environments"})
	rs := startReplicas(t, w, []string{"a", "b", "c"}, replicaArgs(repo, 2))
	a := rs.reps[0]
	c1 := repo.commit("v1", map[string]string{"envs/roll.yaml": v1})
	a.eventually("v1 applied", func() bool { return a.appliedFrom("fleet/roll", c1) })
	c2 := repo.commit("v2", map[string]string{"envs/roll.yaml": v2})
	a.eventually("v2 applied", func() bool { return a.appliedFrom("fleet/roll", c2) })
	if err := os.WriteFile(filepath.Join(out, "block"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	var started struct{ RunID string }
	if code := a.do("POST", "/api/v1/environments/fleet/roll/runs", map[string]any{"kind": "rollback", "to": 1}, &started); code != http.StatusAccepted {
		t.Fatalf("start the rollback: %d", code)
	}
	waitFor(t, 2*time.Minute, func() bool { return len(lines(t, filepath.Join(out, "rolling"))) >= 1 })
	runner := rs.byName(strings.TrimSpace(lines(t, filepath.Join(out, "rolling"))[0]))
	rs.kill(runner)
	if err := os.Remove(filepath.Join(out, "block")); err != nil {
		t.Fatal(err)
	}
	alive := rs.otherThan(runner)
	alive.eventually("the rollback resumed and ended", func() bool {
		r := newestRun(t, alive, "fleet/roll")
		return r.Source == "recovery" && r.Status != "running" && r.Status != "queued"
	})
	if r := newestRun(t, alive, "fleet/roll"); r.Status != "succeeded" || r.Kind != "rollback" {
		t.Errorf("the resume of the rollback: %+v, want a rollback that succeeded", r)
	}
	// Every live replica says so, a (which queued it, and knew it as a
	// job) included, however soon the runner died after it started.
	for _, s := range rs.reps {
		if s == runner {
			continue
		}
		var killed apiRun
		if code := s.do("GET", "/api/v1/runs/"+started.RunID, nil, &killed); code != http.StatusOK || killed.Status != "interrupted" {
			t.Errorf("the killed rollback, on replica %s: %d %+v, want interrupted", rs.name[s], code, killed)
		}
	}
	// Once no knit job waits or runs (the dead replica's was cancelled by
	// the leader, or rescued by River and found recorded), the rollback
	// applied v1 once: by its resume.
	alive.eventually("no job waiting or running", func() bool {
		return rs.count(t, `SELECT count(*) FROM river_job WHERE kind = 'knit_run'
			AND state IN ('available', 'scheduled', 'retryable', 'pending', 'running')`) == 0
	})
	if applied := lines(t, filepath.Join(out, "applied")); !slices.Equal(applied, []string{"v1", "v2", "v1"}) {
		var rec json.RawMessage
		alive.do("GET", "/api/v1/runs/"+newestRun(t, alive, "fleet/roll").ID, nil, &rec)
		t.Errorf("applied %v, want v1, v2, then v1 once (the revision the rollback went back to); the resume: %s", applied, rec)
	}
}
