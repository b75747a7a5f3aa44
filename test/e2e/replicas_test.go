package e2e

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"knit.dev/knit/internal/keyfile"
	"knit.dev/knit/internal/testtools/pgtest"
)

// Several knit serve replicas on one PostgreSQL store (issue 29 point 2):
// runs are River jobs, one elected leader watches git, and any replica
// streams any run.

// replicaArgs are a replica's flags: GitOps on repo, short leases so a
// dead replica is noticed soon, at most max runs at once.
func replicaArgs(repo *gitRepo, max int) []string {
	return gitServerArgs(repo, "--max-concurrent-runs", strconv.Itoa(max), "--lock-lease", "3s",
		"--leader-lease", "3s", "--tool-env", "REPLICA_NAME")
}

// replicaSet is n knit serve processes on one database, each with a data
// dir of its own (one key, copied: every replica needs it).
type replicaSet struct {
	w    *world
	pg   *pgtest.Cluster
	dsn  string
	reps []*server
	name map[*server]string
}

func startReplicas(t *testing.T, w *world, names []string, args []string) *replicaSet {
	t.Helper()
	pg := pgtest.Start(t)
	dsn := pg.DB(t)
	w.env = append(without(w.env, "KNIT_STORE_DSN="), "KNIT_STORE_DSN="+dsn)
	token := strings.TrimSpace(w.ok("token", "create", "root", "--role", "admin").stdout)
	key, err := os.ReadFile(filepath.Join(w.dataDir, keyfile.Name))
	if err != nil {
		t.Fatal(err)
	}
	rs := &replicaSet{w: w, pg: pg, dsn: dsn, name: map[*server]string{}}
	base := w.env
	for _, n := range names {
		dir := rs.dataDir(n)
		if err := os.MkdirAll(dir, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, keyfile.Name), key, 0o600); err != nil {
			t.Fatal(err)
		}
		w.env = append(without(base, "KNIT_DATA_DIR="), "KNIT_DATA_DIR="+dir, "REPLICA_NAME="+n)
		if w.apart {
			w.env = append(w.env, "KNIT_HOST=host-"+n)
		}
		s := w.startServerWithToken(token, args...)
		rs.reps = append(rs.reps, s)
		rs.name[s] = n
	}
	w.env = base
	t.Cleanup(func() { // every replica says what it did
		if t.Failed() {
			for _, s := range rs.reps {
				t.Logf("replica %s's log:\n%s", rs.name[s], tail(s.log.String()))
			}
		}
	})
	return rs
}

// dataDir is replica n's data dir.
func (rs *replicaSet) dataDir(n string) string { return filepath.Join(rs.w.dir, "replica-"+n) }

// leader is the replica that says it leads last (nil: none yet).
func (rs *replicaSet) leader() *server {
	var lead *server
	var at int
	for _, s := range rs.reps {
		if s.cmd.ProcessState != nil {
			continue
		}
		log := s.log.String()
		if i := strings.LastIndex(log, "leader: this replica leads"); i >= 0 && !strings.Contains(log[i:], "stops leading") && i >= at {
			lead, at = s, i
		}
	}
	return lead
}

func (rs *replicaSet) byName(n string) *server {
	for s, name := range rs.name {
		if name == n {
			return s
		}
	}
	rs.w.t.Fatalf("no replica %q", n)
	return nil
}

// startedOn waits until out/started has n lines (one per start of a
// component, naming its replica) and returns the replica of the nth.
func (rs *replicaSet) startedOn(out string, n int) *server {
	t := rs.w.t
	t.Helper()
	waitFor(t, 2*time.Minute, func() bool { return len(lines(t, filepath.Join(out, "started"))) >= n })
	return rs.byName(strings.TrimSpace(lines(t, filepath.Join(out, "started"))[n-1]))
}

// otherThan is a replica that is none of not.
func (rs *replicaSet) otherThan(not ...*server) *server {
	for _, s := range rs.reps {
		if !slices.Contains(not, s) {
			return s
		}
	}
	rs.w.t.Fatal("no other replica")
	return nil
}

// kill ends a replica with SIGKILL: no chance to record or release anything.
func (rs *replicaSet) kill(s *server) { rs.signal(s, syscall.SIGKILL) }

// signal sends sig to a replica and waits for its end.
func (rs *replicaSet) signal(s *server, sig syscall.Signal) {
	if err := s.cmd.Process.Signal(sig); err != nil {
		rs.w.t.Fatal(err)
	}
	_ = s.cmd.Wait()
}

// countingScript is a component's apply that records, per replica, how
// many applies run at once (files present in its running/ folder as it
// starts), and appends "env/component replica" to applied once done.
const countingScript = `set -e
d=@DIR@/running-$REPLICA_NAME; mkdir -p $d; touch $d/@ENV@
ls $d | wc -l >> @DIR@/concurrent-$REPLICA_NAME
sleep 0.4
rm $d/@ENV@
echo "@ENV@ $REPLICA_NAME" >> @DIR@/applied`

func countedEnv(name, dir string) string {
	script := strings.ReplaceAll(strings.ReplaceAll(countingScript, "@DIR@", dir), "@ENV@", name)
	return `apiVersion: knit.dev/v1
kind: Environment
metadata: {name: ` + name + `}
spec:
  teamName: fleet
  envName: ` + name + `
  autoApprove: true
  components:
    - name: app
      type: script
      script:
        apply: |
` + indent(script, "          ") + "\n"
}

func indent(s, pad string) string {
	return pad + strings.ReplaceAll(s, "\n", "\n"+pad)
}

func TestThreeReplicasApplyThirtyEnvironmentsOnceEachWithinTheirConcurrency(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	out := w.path("out")
	if err := os.MkdirAll(out, 0o755); err != nil {
		t.Fatal(err)
	}
	repo := newGitRepo(t, map[string]string{"envs/README": "environments",
		"envs/modules/data/main.tf": `resource "terraform_data" "d" { input = "fleet" }`})
	const max = 2
	w.loggingTofu() // every replica's tofu: the wrapper logs each invocation
	rs := startReplicas(t, w, []string{"a", "b", "c"}, replicaArgs(repo, max))
	a := rs.reps[0]
	a.eventually("a leader elected", func() bool { return rs.leader() != nil })

	// Each environment: the counting script (which replica, how many at
	// once) and a terraform component named after it, whose tofu applies
	// the wrapper counts.
	files := map[string]string{}
	for i := range 30 {
		n := fmt.Sprintf("e%02d", i)
		files["envs/"+n+".yaml"] = countedEnv(n, out) + `    - name: tf-` + n + `
      type: terraform
      module: {source: ./modules/data}
`
	}
	head := repo.commit("thirty environments", files)
	for i := range 30 {
		env := fmt.Sprintf("fleet/e%02d", i)
		a.eventually(env+" applied", func() bool { return a.appliedFrom(env, head) })
	}

	// Each environment applied exactly once, by some replica.
	applied := lines(t, filepath.Join(out, "applied"))
	seen := map[string]int{}
	by := map[string]int{}
	for _, l := range applied {
		f := strings.Fields(l)
		if len(f) != 2 {
			t.Fatalf("applied line %q: want env and replica", l)
		}
		seen[f[0]]++
		by[f[1]]++
	}
	if len(seen) != 30 || len(applied) != 30 {
		t.Errorf("%d applies of %d environments, want 30 of 30 (each once):\n%s", len(applied), len(seen), strings.Join(applied, "\n"))
	}
	// No replica ever ran more than its bound at once; more than one worked.
	for _, n := range []string{"a", "b", "c"} {
		for _, l := range lines(t, filepath.Join(out, "concurrent-"+n)) {
			if c, _ := strconv.Atoi(strings.TrimSpace(l)); c > max {
				t.Errorf("replica %s ran %d applies at once, more than --max-concurrent-runs %d", n, c, max)
			}
		}
	}
	if len(by) < 2 {
		t.Errorf("one replica applied everything (%v): the queue was not shared", by)
	}
	// Each terraform component applied exactly once, by tofu itself.
	tfApplies := map[string]int{}
	for _, r := range w.toolRuns() {
		if f := strings.Fields(r); len(f) > 1 && f[1] == "apply" {
			tfApplies[f[0]]++
		}
	}
	for i := range 30 {
		if c := fmt.Sprintf("tf-e%02d", i); tfApplies[c] != 1 {
			t.Errorf("tofu applied %s %d times, want once (all applies: %v)", c, tfApplies[c], tfApplies)
		}
	}
	t.Logf("applies per replica: %v", by)

	// The leader dies: another replica takes git over and applies the
	// next commit.
	lead := rs.leader()
	rs.kill(lead)
	next := repo.commit("one more", map[string]string{"envs/late.yaml": countedEnv("late", out)})
	var alive *server
	for _, s := range rs.reps {
		if s != lead {
			alive = s
		}
	}
	alive.eventually("the commit after the leader's death applied", func() bool { return alive.appliedFrom("fleet/late", next) })
	if nl := rs.leader(); nl == nil || nl == lead {
		t.Errorf("no other replica says it leads after the leader was killed")
	}
}

// A replica killed (SIGKILL: nothing recorded, its lease must end) or
// stopped (SIGTERM: it interrupts the run and queues its resume) in the
// middle of an apply: another replica finishes it, applying once.
func TestAReplicaKilledMidApplyIsResumedElsewhereAndAppliesOnce(t *testing.T) {
	t.Parallel()
	for _, sig := range []syscall.Signal{syscall.SIGKILL, syscall.SIGTERM} {
		t.Run(sig.String(), func(t *testing.T) { stopMidApply(t, sig) })
	}
}

func stopMidApply(t *testing.T, sig syscall.Signal) {
	w := newWorld(t)
	out := w.path("out")
	if err := os.MkdirAll(out, 0o755); err != nil {
		t.Fatal(err)
	}
	// The apply waits for a file the test writes; each start records
	// which replica ran it.
	long := `apiVersion: knit.dev/v1
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
          echo $REPLICA_NAME >> ` + out + `/started
          echo "step one" >&2
          while [ ! -f ` + out + `/go ]; do sleep 0.1; done
          echo "app $REPLICA_NAME" >> ` + out + `/applied
`
	repo := newGitRepo(t, map[string]string{"envs/README": "environments"})
	rs := startReplicas(t, w, []string{"a", "b", "c"}, replicaArgs(repo, 2))
	head := repo.commit("long", map[string]string{"envs/long.yaml": long})
	first := rs.startedOn(out, 1)
	other := rs.otherThan(first)

	// Another replica streams the run live, up to the component applying.
	runID := newestRun(t, other, "fleet/long").ID
	streamUntil(t, other, runID, `"component":"app","status":"applying"`)

	rs.signal(first, sig)
	second := rs.startedOn(out, 2)
	if second == first {
		t.Fatal("the killed replica resumed its own run")
	}
	resumed := newestRun(t, other, "fleet/long")
	if resumed.ID == runID || resumed.Source != "recovery" {
		t.Fatalf("the newest run is %+v, want a recovery run after %s", resumed, runID)
	}
	// The resume, executing on one replica, streams from another to its end.
	watcher := rs.otherThan(first, second)
	done := make(chan string, 1)
	go func() { done <- streamUntil(t, watcher, resumed.ID, `"kind":"run-finished"`) }()
	if err := os.WriteFile(filepath.Join(out, "go"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	select {
	case got := <-done:
		if !strings.Contains(got, `"runStatus":"succeeded"`) {
			t.Errorf("the resumed run's stream did not end succeeded:\n%s", got)
		}
	case <-time.After(2 * time.Minute):
		t.Fatal("the resumed run's stream never ended")
	}
	watcher.eventually("long applied", func() bool { return watcher.appliedFrom("fleet/long", head) })

	var old apiRun
	if code := watcher.do("GET", "/api/v1/runs/"+runID, nil, &old); code != http.StatusOK || old.Status != "interrupted" {
		t.Errorf("the killed replica's run: %d %+v, want interrupted", code, old)
	}
	// The killed replica's script was ended before the resume ran: the
	// component applied once.
	time.Sleep(300 * time.Millisecond) // an orphan would have seen "go" by now (it polls every 0.1s)
	if applied := lines(t, filepath.Join(out, "applied")); len(applied) != 1 {
		t.Errorf("applied %d times, want once:\n%s", len(applied), strings.Join(applied, "\n"))
	}
}

type apiRun struct {
	ID     string `json:"id"`
	Status string `json:"status"`
	Source string `json:"source"`
	Kind   string `json:"kind"`
}

func newestRun(t *testing.T, s *server, env string) apiRun {
	t.Helper()
	var p struct{ Items []apiRun }
	if code := s.do("GET", "/api/v1/environments/"+env+"/runs", nil, &p); code != http.StatusOK || len(p.Items) == 0 {
		t.Fatalf("runs of %s: %d %+v", env, code, p)
	}
	return p.Items[0]
}

// streamUntil reads run id's event stream from s until a line matches
// pattern, and returns what it read.
func streamUntil(t *testing.T, s *server, id, pattern string) string {
	re := regexp.MustCompile(pattern)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute) // hang guard
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", s.url+"/api/v1/runs/"+id+"/events", nil)
	req.Header.Set("Authorization", "Bearer "+s.token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Errorf("events of %s: %v", id, err)
		return ""
	}
	defer resp.Body.Close()
	var b strings.Builder
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		b.WriteString(sc.Text() + "\n")
		if re.MatchString(sc.Text()) {
			return b.String()
		}
	}
	t.Errorf("the stream of %s from %s ended before %s:\n%s\nserver log:\n%s", id, s.url, pattern, b.String(), s.log)
	return b.String()
}

// lines reads a file's non-empty lines, in order (none when it does not exist).
func lines(t *testing.T, path string) []string {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil
	}
	var out []string
	for _, l := range strings.Split(string(data), "\n") {
		if strings.TrimSpace(l) != "" {
			out = append(out, l)
		}
	}
	return out
}
