package e2e

import (
	"bufio"
	"context"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// Issue 35 item 4 and item 10's streams, on PostgreSQL replicas.

// waitingEnv is an environment whose one apply records its replica in
// out/started, says "step one", ignores SIGINT (what a dying knit sends
// its tools) and SIGTERM (noted in out/termed): a tool slow to stop,
// whose end takes all of the tool grace, then SIGKILL; it waits for
// out/go.
func waitingEnv(out string) string {
	return `apiVersion: knit.dev/v1
kind: Environment
metadata: {name: long}
spec:
  teamName: fleet
  envName: long
  autoApprove: true
  components:
    - name: app
      type: script
      script:
        apply: |
          trap '' INT
          trap 'echo $REPLICA_NAME >> ` + out + `/termed' TERM
          echo $REPLICA_NAME >> ` + out + `/started
          echo "step one" >&2
          while [ ! -f ` + out + `/go ]; do sleep 0.1; done
          echo "app $REPLICA_NAME" >> ` + out + `/applied
`
}

// streamAt reads path's event stream from s (the API's with the token,
// the dashboard's with its cookie) until a line matches pattern, and
// returns what it read; ok is false when the stream ended first.
func streamAt(t *testing.T, s *server, path, pattern string) (got string, ok bool) {
	re := regexp.MustCompile(pattern)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute) // hang guard
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", s.url+path, nil)
	req.Header.Set("Authorization", "Bearer "+s.token)
	req.Header.Set("Accept", "text/event-stream")
	req.AddCookie(&http.Cookie{Name: "knit_token", Value: s.token})
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err.Error(), false
	}
	defer resp.Body.Close()
	var b strings.Builder
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		b.WriteString(sc.Text() + "\n")
		if re.MatchString(sc.Text()) {
			return b.String(), true
		}
	}
	return b.String(), false
}

// TestStreamsOfARunFollowItAcrossReplicasAndEndAfterItsReplicaDies: the
// dashboard of one replica streams a run executing on another (it showed
// nothing), and the API's and the dashboard's streams of a run whose
// replica is killed end once the run ends elsewhere, naming the run that
// resumed it (they never ended).
func TestStreamsOfARunFollowItAcrossReplicasAndEndAfterItsReplicaDies(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	out := w.path("out")
	if err := os.MkdirAll(out, 0o755); err != nil {
		t.Fatal(err)
	}
	repo := newGitRepo(t, map[string]string{"envs/README": "environments"})
	rs := startReplicas(t, w, []string{"a", "b", "c"}, replicaArgs(repo, 2))
	head := repo.commit("long", map[string]string{"envs/long.yaml": waitingEnv(out)})
	first := rs.startedOn(out, 1)
	other := rs.otherThan(first)
	runID := newestRun(t, other, "fleet/long").ID

	if got, ok := streamAt(t, other, "/runs/"+runID+"/events", `step one`); !ok {
		t.Fatalf("the dashboard of another replica did not stream the run:\n%s\nlog:\n%s", got, other.log)
	}
	type stream struct {
		got string
		ok  bool
	}
	api, dash := make(chan stream, 1), make(chan stream, 1)
	go func() {
		g, ok := streamAt(t, other, "/api/v1/runs/"+runID+"/events", `"kind":"run-finished"`)
		api <- stream{g, ok}
	}()
	go func() { g, ok := streamAt(t, other, "/runs/"+runID+"/events", `^event: done`); dash <- stream{g, ok} }()
	time.Sleep(time.Second) // let both streams catch up to the live run (no assertion rests on it)
	rs.kill(first)

	second := rs.startedOn(out, 2)
	if second == first {
		t.Fatal("the killed replica resumed its own run")
	}
	resumed := newestRun(t, other, "fleet/long")
	if resumed.ID == runID || resumed.Source != "recovery" {
		t.Fatalf("newest run %+v, want a recovery run after %s", resumed, runID)
	}
	for name, c := range map[string]chan stream{"API": api, "dashboard": dash} {
		select {
		case s := <-c:
			if !s.ok || !strings.Contains(s.got, "interrupted") || !strings.Contains(s.got, resumed.ID) {
				t.Errorf("the %s stream of the killed replica's run: ended %v, want it to end interrupted naming %s:\n%s", name, s.ok, resumed.ID, s.got)
			}
		case <-time.After(3 * time.Minute):
			t.Fatalf("the %s stream of the killed replica's run never ended", name)
		}
	}
	if err := os.WriteFile(filepath.Join(out, "go"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	other.eventually("long applied", func() bool { return other.appliedFrom("fleet/long", head) })
}

// TestARunWhoseResumeIsKilledToo is issue 35 item 4: kill -9 of the
// replica running an apply, then kill -9 of the replica running its
// resume while it waits out the tool grace of the first's script: the
// third replica resumes it again, the commit is applied once, and no
// River job stays running for a dead replica.
func TestARunWhoseResumeIsKilledToo(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	out := w.path("out")
	if err := os.MkdirAll(out, 0o755); err != nil {
		t.Fatal(err)
	}
	repo := newGitRepo(t, map[string]string{"envs/README": "environments"})
	rs := startReplicas(t, w, []string{"a", "b", "c"}, replicaArgs(repo, 2))
	head := repo.commit("long", map[string]string{"envs/long.yaml": waitingEnv(out)})
	first := rs.startedOn(out, 1)
	// The script's process group is recorded (what the resume ends)
	// before its replica dies.
	rs.waitFor("the script's process group recorded", func() bool { return rs.count(t, `SELECT count(*) FROM tool_processes WHERE env = 'fleet/long'`) > 0 })
	killedAt := time.Now()
	rs.kill(first)

	// The resume ends the first's script: SIGTERM (which it notes and
	// ignores), then SIGKILL after the tool grace. Meanwhile, its replica
	// dies too.
	rs.waitFor("the first's script to get SIGTERM from the resume", func() bool { return len(lines(t, filepath.Join(out, "termed"))) >= 1 })
	second := rs.runningJob(t)
	if second == first {
		t.Fatal("the dead replica runs the resume")
	}
	rs.kill(second)

	third := rs.otherThan(first, second)
	third.eventually("the run started again on the third replica", func() bool { return len(lines(t, filepath.Join(out, "started"))) >= 2 })
	if got := rs.byName(strings.TrimSpace(lines(t, filepath.Join(out, "started"))[1])); got != third {
		t.Fatalf("the second start is on %s, want the third replica", rs.name[got])
	}
	if err := os.WriteFile(filepath.Join(out, "go"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	third.eventually("long applied", func() bool { return third.appliedFrom("fleet/long", head) })
	t.Logf("applied %v after the first kill (leases of 3s)", time.Since(killedAt).Round(time.Second))
	r := newestRun(t, third, "fleet/long")
	if r.Source != "recovery" || r.Status != "succeeded" {
		t.Errorf("the newest run: %+v, want a recovery run succeeded", r)
	}
	time.Sleep(300 * time.Millisecond) // an orphan would have seen "go" by now (it polls every 0.1s)
	if applied := lines(t, filepath.Join(out, "applied")); len(applied) != 1 || !strings.HasSuffix(applied[0], rs.name[third]) {
		t.Errorf("applied %v, want once, by the third replica", applied)
	}
	third.eventually("no River job running for a dead replica", func() bool { return rs.runningJobs(t) == 0 })
}

// waitFor polls cond until it holds, failing with every replica's log
// after two minutes.
func (rs *replicaSet) waitFor(what string, cond func() bool) {
	t := rs.w.t
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for !cond() {
		if time.Now().After(deadline) {
			for _, s := range rs.reps {
				t.Logf("replica %s log:\n%s", rs.name[s], s.log)
			}
			t.Fatalf("never happened: %s", what)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// runningJob is the replica working the one knit job running (River's
// attempted_by names a replica host-pid-random).
func (rs *replicaSet) runningJob(t *testing.T) *server {
	t.Helper()
	var by string
	waitFor(t, time.Minute, func() bool {
		conn, err := pgx.Connect(t.Context(), rs.dsn)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close(context.Background())
		err = conn.QueryRow(t.Context(), `SELECT attempted_by[array_length(attempted_by, 1)] FROM river_job
			WHERE kind = 'knit_run' AND state = 'running' ORDER BY id DESC LIMIT 1`).Scan(&by)
		return err == nil
	})
	for _, s := range rs.reps {
		if slices.Contains(strings.Split(by, "-"), strconv.Itoa(s.cmd.Process.Pid)) {
			return s
		}
	}
	t.Fatalf("no replica works the running job (attempted by %q)", by)
	return nil
}

// runningJobs counts knit's River jobs in state running.
func (rs *replicaSet) runningJobs(t *testing.T) int {
	return rs.count(t, `SELECT count(*) FROM river_job WHERE kind = 'knit_run' AND state = 'running'`)
}

// count is the answer of a count(*) query on the replicas' database.
func (rs *replicaSet) count(t *testing.T, query string) int {
	conn, err := pgx.Connect(t.Context(), rs.dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	var n int
	if err := conn.QueryRow(t.Context(), query).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}
