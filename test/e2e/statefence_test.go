package e2e

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// gateModule: a terraform_data whose creation runs a provisioner that
// appends to DIR/created (one line per creation: countable), keeps its
// tool's state grant (the TF_HTTP_* it inherits) in DIR/grant-N, and
// waits for DIR/go-N before the tool writes its state.
const gateModule = `
variable "n" { type = number }
variable "dir" { type = string }
resource "terraform_data" "d" {
  triggers_replace = var.n
  provisioner "local-exec" {
    command = "env | grep '^TF_HTTP_' > ${var.dir}/grant-${var.n}; echo $PPID ${var.n} >> ${var.dir}/created; while [ ! -f ${var.dir}/go-${var.n} ]; do sleep 0.1; done"
  }
}
output "n" { value = var.n }
`

func gateEnv(name, dir string, n int) string {
	return `apiVersion: knit.dev/v1
kind: Environment
metadata: {name: ` + name + `}
spec:
  teamName: qa
  envName: ` + name + `
  autoApprove: true
  components:
    - name: db
      type: terraform
      module: {source: ./modules/gate}
      variables: [{name: n, value: ` + strconv.Itoa(n) + `}, {name: dir, value: "` + dir + `"}]
`
}

// stateGrant is a tool's grant as a provisioner read it from its environment.
type stateGrant map[string]string

func readGrant(t *testing.T, path string) stateGrant {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	g := stateGrant{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if k, v, ok := strings.Cut(sc.Text(), "="); ok {
			g[k] = v
		}
	}
	if g["TF_HTTP_ADDRESS"] == "" || g["TF_HTTP_PASSWORD"] == "" {
		t.Fatalf("no grant in %s: %v", path, g)
	}
	return g
}

// call makes one request of the state protocol with the grant.
func (g stateGrant) call(t *testing.T, method, query string, body []byte) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, g["TF_HTTP_ADDRESS"]+query, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.SetBasicAuth(g["TF_HTTP_USERNAME"], g["TF_HTTP_PASSWORD"])
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestAStateGrantIsFencedByItsRun (issue 35, state): on PostgreSQL (state
// in the store, served to tofu on loopback), a grant taken from a running
// apply's tool cannot roll the state back: a POST of an older serial, or
// of another lineage, with the state lock's ID, is 409. Once that run has
// finished, the same grant gets 403 on GET, POST and DELETE, and the
// state is the run's own.
func TestAStateGrantIsFencedByItsRun(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	dir := w.path("gate")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, "go-1"), nil, 0o644)
	repo := newGitRepo(t, map[string]string{"envs/README": "environments", "envs/modules/gate/main.tf": gateModule})
	rs := startReplicas(t, w, []string{"a"}, replicaArgs(repo, 2))
	s := rs.reps[0]
	first := repo.commit("gate 1", map[string]string{"envs/gate.yaml": gateEnv("gate", dir, 1)})
	s.eventually("the first apply", func() bool { return s.appliedFrom("qa/gate", first) })
	second := repo.commit("gate 2", map[string]string{"envs/gate.yaml": gateEnv("gate", dir, 2)})
	waitFor(t, 2*time.Minute, func() bool { return len(lines(t, filepath.Join(dir, "created"))) == 2 }) // grant-2 is written
	g := readGrant(t, filepath.Join(dir, "grant-2"))

	// Mid-apply: the grant reads the state (serial, lineage) and learns the
	// lock's ID from a refused LOCK.
	code, body := g.call(t, "GET", "", nil)
	var st struct {
		Serial  int64  `json:"serial"`
		Lineage string `json:"lineage"`
	}
	if code != 200 || json.Unmarshal([]byte(body), &st) != nil || st.Serial < 1 || st.Lineage == "" {
		t.Fatalf("GET mid-apply: %d %.200s", code, body)
	}
	code, body = g.call(t, "LOCK", "", []byte(`{"ID":"mallory","Operation":"OperationTypeApply"}`))
	var holder struct{ ID string }
	if code != http.StatusLocked || json.Unmarshal([]byte(body), &holder) != nil || holder.ID == "" {
		t.Fatalf("LOCK mid-apply: %d %s, want 423 naming the holder", code, body)
	}
	older := `{"version":4,"serial":` + strconv.Itoa(int(st.Serial)-1) + `,"lineage":"` + st.Lineage + `","resources":[]}`
	if code, body := g.call(t, "POST", "?ID="+holder.ID, []byte(older)); code != http.StatusConflict {
		t.Errorf("POST of an older serial with the lock's ID: %d %s, want 409", code, body)
	}
	other := `{"version":4,"serial":99,"lineage":"mallory","resources":[]}`
	if code, body := g.call(t, "POST", "?ID="+holder.ID, []byte(other)); code != http.StatusConflict {
		t.Errorf("POST of another lineage with the lock's ID: %d %s, want 409", code, body)
	}
	os.WriteFile(filepath.Join(dir, "go-2"), nil, 0o644)
	s.eventually("the second apply", func() bool { return s.appliedFrom("qa/gate", second) })

	// The run is over: its grant reaches nothing.
	for _, m := range []struct{ method, query, body string }{{"GET", "", ""}, {"POST", "?ID=" + holder.ID, other}, {"DELETE", "?ID=" + holder.ID, ""}} {
		if code, body := g.call(t, m.method, m.query, []byte(m.body)); code != http.StatusForbidden {
			t.Errorf("%s with the grant of a finished run: %d %.200s, want 403", m.method, code, body)
		}
	}
	data, _, err := w.openStore().TFState(t.Context(), "qa/gate/db")
	var after struct {
		Serial  int64  `json:"serial"`
		Lineage string `json:"lineage"`
	}
	if err != nil || json.Unmarshal(data, &after) != nil || after.Lineage != st.Lineage || after.Serial <= st.Serial {
		t.Errorf("the state after the attacks: %+v, %v; want lineage %s past serial %d\n%.300s", after, err, st.Lineage, st.Serial, data)
	}
}

// TestAStoreOutageMidApplyLosesNoState (issue 35, state): PostgreSQL is
// stopped for 30 s while tofu applies (its resource created, its state
// not yet written), then started again. The state server retries the
// write, and tofu its request, within the run's lease: the apply ends
// with its state in the store, and the resource was created once (no
// resume created it again).
func TestAStoreOutageMidApplyLosesNoState(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	dir := w.path("gate")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	repo := newGitRepo(t, map[string]string{"envs/README": "environments", "envs/modules/gate/main.tf": gateModule})
	rs := startReplicas(t, w, []string{"a"}, gitServerArgs(repo, "--lock-lease", "90s"))
	s := rs.reps[0]
	head := repo.commit("gate", map[string]string{"envs/gate.yaml": gateEnv("gate", dir, 1)})
	created := filepath.Join(dir, "created")
	waitFor(t, 2*time.Minute, func() bool { return len(lines(t, created)) == 1 })

	rs.pg.Stop(t)
	os.WriteFile(filepath.Join(dir, "go-1"), nil, 0o644) // tofu now writes its state, to a store that is down
	time.Sleep(30 * time.Second)
	rs.pg.StartAgain(t)
	s.eventually("the apply after the outage", func() bool { return s.appliedFrom("qa/gate", head) })

	if got := lines(t, created); len(got) != 1 {
		t.Errorf("the resource was created %d times, want once:\n%s\nserver log:\n%s", len(got), strings.Join(got, "\n"), s.log)
	}
	data, _, err := w.openStore().TFState(t.Context(), "qa/gate/db")
	var st struct {
		Serial int64 `json:"serial"`
	}
	if err != nil || json.Unmarshal(data, &st) != nil || st.Serial < 1 {
		t.Errorf("the state in the store after the outage: %v %.200s", err, data)
	}
	filepath.WalkDir(rs.dataDir("a"), func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.Name() == "errored.tfstate" {
			t.Errorf("tofu left %s: its write was lost", p)
		}
		return nil
	})
}

// pausedModule's provisioner says which replica's tool started it, waits
// for DIR/go, and says which finished.
const pausedModule = `
variable "dir" { type = string }
resource "terraform_data" "d" {
  provisioner "local-exec" {
    command = "echo $REPLICA_NAME >> ${var.dir}/started; while [ ! -f ${var.dir}/go ]; do sleep 0.1; done; echo $REPLICA_NAME >> ${var.dir}/done"
  }
}
output "id" { value = terraform_data.d.id }
`

// TestAReplicaPausedPastItsLeaseCannotAct (issue 35, state): a replica
// stopped (SIGSTOP, as a GC pause or a frozen VM stops knit) mid-apply,
// past its lease; the replicas act as if on machines of their own. Its watchdog, a process of its own, stops its tool at
// the lease's end; only then, the lease and the tool grace over, does
// another replica take the environment over and resume the apply. No two
// tools of the component ever run at once (sampled from /proc), the
// resource is created once (one provisioner finished), and once the
// paused replica resumes (SIGCONT) the state stays the newer run's.
func TestAReplicaPausedPastItsLeaseCannotAct(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	dir := w.path("paused")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	repo := newGitRepo(t, map[string]string{"envs/README": "environments", "envs/modules/paused/main.tf": pausedModule})
	// Every tool of this test's replicas (its only component's) has its
	// replica's data dir in TF_PLUGIN_CACHE_DIR; knit itself has not.
	sampler := sampleGroups("TF_PLUGIN_CACHE_DIR=" + filepath.Join(w.dir, "replica-"))
	w.apart = true // on one machine, the resume would end the paused replica's tools itself
	rs := startReplicas(t, w, []string{"a", "b"}, replicaArgs(repo, 2))
	head := repo.commit("paused", map[string]string{"envs/paused.yaml": `apiVersion: knit.dev/v1
kind: Environment
metadata: {name: paused}
spec:
  teamName: qa
  envName: paused
  autoApprove: true
  components:
    - name: db
      type: terraform
      module: {source: ./modules/paused}
      variables: [{name: dir, value: "` + dir + `"}]
`})
	first := rs.startedOn(dir, 1)
	other := rs.otherThan(first)
	paused := newestRun(t, other, "qa/paused")
	if err := first.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	resumed := false
	t.Cleanup(func() {
		if !resumed {
			first.cmd.Process.Signal(syscall.SIGCONT)
		}
	})

	// The other replica resumes the apply; its tool runs to the end.
	if second := rs.startedOn(dir, 2); second != other {
		t.Fatalf("the second start was on %s, want the replica that was not paused", rs.name[second])
	}
	os.WriteFile(filepath.Join(dir, "go"), nil, 0o644)
	other.eventually("the resumed apply", func() bool { return other.appliedFrom("qa/paused", head) })
	st := w.openStore()
	newer, _, err := st.TFState(t.Context(), "qa/paused/db")
	if err != nil {
		t.Fatal(err)
	}

	// The paused replica comes back: its lease is gone, and so is its tool.
	if err := first.cmd.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	resumed = true
	time.Sleep(3 * time.Second) // what it would write late, it has tried by now
	most, seen := sampler.finish()
	if most != 1 || seen < 2 {
		t.Errorf("tool process groups of qa/paused/db at once: at most %d (want 1); groups in all: %d (want both replicas')", most, seen)
	}
	if done := lines(t, filepath.Join(dir, "done")); len(done) != 1 || strings.TrimSpace(done[0]) != rs.name[other] {
		t.Errorf("provisioners that finished: %v, want only the resumed one's (%s)", done, rs.name[other])
	}
	after, _, err := st.TFState(t.Context(), "qa/paused/db")
	if err != nil || !bytes.Equal(after, newer) {
		t.Errorf("the state changed after the paused replica resumed (%v):\nbefore %.300s\nafter  %.300s", err, newer, after)
	}
	var old apiRun
	if code := other.do("GET", "/api/v1/runs/"+paused.ID, nil, &old); code != http.StatusOK || old.Status != "interrupted" {
		t.Errorf("the paused replica's run after it resumed: %d %+v, want interrupted (its late record refused)\npaused replica's log:\n%s", code, old, first.log)
	}
}
