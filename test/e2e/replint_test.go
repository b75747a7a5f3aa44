package e2e

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"knit.dev/knit/internal/store"
	"knit.dev/knit/internal/testtools/pgtest"
)

// Three knit serve replicas on one PostgreSQL store running Terraform
// (issue 29 points 2 and 3 together): a plan made on one replica is
// approved through another and applied, byte for byte, wherever the queue
// runs it; every replica streams that run; the state is the store's.

// sharedRepo is a GitOps repository holding sharedModules and the shared
// environment (gen → gated db carrying the secret into its state).
func sharedRepo(t *testing.T, w *world) *gitRepo {
	files := map[string]string{}
	for p, src := range sharedModules {
		files["envs/"+p] = src
	}
	files["envs/shared.yaml"] = sharedEnv(w)
	return newGitRepo(t, files)
}

// holder is the replica whose data dir holds path (relative), or "".
func (rs *replicaSet) holder(rel string) string {
	for _, n := range rs.name {
		if _, err := os.Stat(filepath.Join(rs.dataDir(n), rel)); err == nil {
			return n
		}
	}
	return ""
}

func TestAnApprovalThroughAnotherReplicaAppliesThePlanAndNoReplicaKeepsTheSecret(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	secret := "tfsecret-" + randomHex(t)
	w.write(map[string]string{"vault.txt": secret + "\n"})
	repo := sharedRepo(t, w)
	rs := startReplicas(t, w, []string{"a", "b", "c"}, replicaArgs(repo, 2))
	a := rs.reps[0]

	// The commit is planned on some replica X: gen applied, db awaits.
	type approval struct {
		ID           int64
		Component    string
		PlanChecksum string
		Status       string
	}
	var waiting approval
	a.eventually("db's plan awaits approval", func() bool {
		var p struct{ Items []approval }
		a.do("GET", "/api/v1/approvals?env=qa/shared", nil, &p)
		for _, ap := range p.Items {
			if ap.Component == "db" && ap.Status == "pending" {
				waiting = ap
				return true
			}
		}
		return false
	})
	st := w.openStore() // the API keeps the plan file's path to itself
	recorded, err := st.Approval(t.Context(), waiting.ID)
	if err != nil || recorded.PlanFile == "" {
		t.Fatalf("approval #%d: %+v, %v", waiting.ID, recorded, err)
	}
	planRel := filepath.Join("approvals", "qa", "shared", filepath.Base(recorded.PlanFile))
	x := rs.holder(planRel)
	if x == "" {
		t.Fatalf("no replica keeps the plan file %s", planRel)
	}
	for _, d := range []string{"work", "approvals"} { // X's disk is a cache
		if err := os.RemoveAll(filepath.Join(rs.dataDir(x), d)); err != nil {
			t.Fatal(err)
		}
	}

	// Approved through another replica's API, naming the plan's checksum.
	var approver string
	for _, n := range []string{"a", "b", "c"} {
		if n != x {
			approver = n
			break
		}
	}
	var decided struct{ RunID string }
	if code := rs.byName(approver).do("POST", "/api/v1/environments/qa/shared/components/db/approve",
		map[string]string{"planChecksum": waiting.PlanChecksum, "reason": "through " + approver}, &decided); code != http.StatusOK || decided.RunID == "" {
		t.Fatalf("approve through %s: %d %+v", approver, code, decided)
	}
	// Every replica streams the apply to its end, wherever it executes.
	streams := map[string]string{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, s := range rs.reps {
		wg.Add(1)
		go func() {
			defer wg.Done()
			got := streamUntil(t, s, decided.RunID, `"kind":"run-finished"`)
			mu.Lock()
			streams[rs.name[s]] = got
			mu.Unlock()
		}()
	}
	wg.Wait()

	exec := rs.holder(planRel)
	if exec == "" {
		t.Fatalf("no replica wrote the approved plan %s to apply it", planRel)
	}
	if a, err := st.Approval(t.Context(), waiting.ID); err != nil || a.Status != "applied" {
		t.Errorf("approval #%d after the apply: %+v, %v; want applied", waiting.ID, a, err)
	}
	applied, err := os.ReadFile(filepath.Join(rs.dataDir(exec), planRel))
	if err != nil {
		t.Fatal(err)
	}
	if sum := sha256.Sum256(applied); hex.EncodeToString(sum[:]) != waiting.PlanChecksum {
		t.Errorf("replica %s applied a plan with checksum %x, the approval is of %s", exec, sum, waiting.PlanChecksum)
	}
	for n, got := range streams {
		if !strings.Contains(got, `"component":"db"`) || !strings.Contains(got, `"runStatus":"succeeded"`) {
			t.Errorf("replica %s's stream of the apply run on %s did not show db and end succeeded:\n%s", n, exec, got)
		}
	}
	a.eventually("shared provisioned", func() bool { e, _ := a.env("qa/shared"); return e.Status == "provisioned" })
	t.Logf("planned on %s, approved through %s, applied on %s", x, approver, exec)

	// A later drift check on a replica that never applied anything reads
	// the state the executing replica wrote, through the store.
	fresh := replicaB(t, w)
	if r := w.knitWith(fresh, "drift", "qa/shared"); r.code != 0 || !strings.Contains(r.stdout, "2 in sync") {
		t.Errorf("drift on a fresh replica: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}

	// The secret is in no copy: the database (River's tables and the run
	// events included) nor any replica's data dir; clear, hex or base64.
	dump := rs.pg.Dump(t, pgtest.DBName(t, rs.dsn))
	for _, table := range []string{"river_job", "knit_run_events", "tf_states", "qa/shared/db"} {
		if !strings.Contains(string(dump), table) {
			t.Fatalf("the dump holds no %s: the test looks in the wrong database", table)
		}
	}
	secretFree(t, "pg_dump", dump, secret)
	dirs := []string{w.dataDir, filepath.Join(w.dir, ".knit-b")}
	for _, n := range []string{"a", "b", "c"} {
		dirs = append(dirs, rs.dataDir(n))
	}
	checked := 0
	for _, dir := range dirs {
		checked += noSecretUnder(t, dir, secret)
	}
	if checked < 20 { // work dirs, plans, tool caches: the test reads the right folders
		t.Errorf("only %d files in the data dirs", checked)
	}
	t.Logf("no copy of the secret in the dump (%d bytes) nor in %d files", len(dump), checked)
}

// secretForms are the ways a secret could sit in a file: clear, hex and
// base64 (padded or not, standard or URL alphabet).
func secretForms(secret string) []string {
	b := []byte(secret)
	return []string{secret, hex.EncodeToString(b), base64.StdEncoding.EncodeToString(b),
		base64.RawStdEncoding.EncodeToString(b), base64.URLEncoding.EncodeToString(b), base64.RawURLEncoding.EncodeToString(b)}
}

// secretFree fails when data holds secret in any of its forms.
func secretFree(t *testing.T, where string, data []byte, secret string) {
	t.Helper()
	for _, f := range secretForms(secret) {
		if strings.Contains(string(data), f) {
			t.Errorf("%s holds the secret (as %q)", where, f)
		}
	}
}

// slowModule creates one resource whose creation waits for the file go
// in out, recording in out/started which replica's tool began it and in
// out/created which one finished it.
const slowModule = `
variable "out" { type = string }
resource "terraform_data" "slow" {
  provisioner "local-exec" {
    command = "echo $REPLICA_NAME >> ${var.out}/started; while [ ! -f ${var.out}/go ]; do sleep 0.1; done; echo $REPLICA_NAME >> ${var.out}/created"
  }
}
`

// tfEnv is environment name of one terraform component slow (slowModule
// writing to out), applied without approval, with extra spec lines.
func tfEnv(name, out, extra string) string {
	return `apiVersion: knit.dev/v1
kind: Environment
metadata: {name: ` + name + `}
spec:
  teamName: qa
  envName: ` + name + `
  autoApprove: true
` + extra + `  components:
    - name: slow
      type: terraform
      module: {source: ./modules/slow}
      variables: [{name: out, value: "` + out + `"}]
`
}

// kill -9 of the replica whose tofu is creating a resource: the run reads
// interrupted, another replica resumes it, takes over the Terraform state
// lock the dead replica's tool held (through a state server that died
// with it), and the resource exists once, in the store's state. The state
// lock records the run it was taken for; it is moved to "another machine"
// before the kill, so that this host cannot judge its knit dead: the
// resume takes it over because its run lost the environment's lock.
func TestAReplicaKilledMidTerraformApplyIsFinishedElsewhereAndTheResourceExistsOnce(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	out := w.path("out")
	if err := os.MkdirAll(out, 0o755); err != nil {
		t.Fatal(err)
	}
	repo := newGitRepo(t, map[string]string{"envs/modules/slow/main.tf": slowModule})
	rs := startReplicas(t, w, []string{"a", "b", "c"}, replicaArgs(repo, 2))
	head := repo.commit("long", map[string]string{"envs/long.yaml": tfEnv("long", out, "")})
	first := rs.startedOn(out, 1)
	other := rs.otherThan(first)
	runID := newestRun(t, other, "qa/long").ID

	// The tool holds the state's lock, through the executing replica.
	st := w.openStore()
	_, lock, err := st.TFState(t.Context(), "qa/long/slow") // no state yet: not found, with its lock
	if (err != nil && !errors.Is(err, store.ErrNotFound)) || lock.ID == "" || lock.PID != first.cmd.Process.Pid {
		t.Fatalf("state lock while creating: %+v, %v; want one held through replica %s (pid %d)", lock, err, rs.name[first], first.cmd.Process.Pid)
	}
	if lock.Run != runID {
		t.Fatalf("state lock while creating: %+v; want it recorded for run %s", lock, runID)
	}
	onAnotherMachine(t, rs.dsn, "qa/long/slow")

	rs.kill(first)
	second := rs.startedOn(out, 2)
	if second == first {
		t.Fatal("the killed replica resumed its own run")
	}
	resumed := newestRun(t, other, "qa/long")
	if resumed.ID == runID || resumed.Source != "recovery" {
		t.Fatalf("the newest run is %+v, want a recovery run after %s", resumed, runID)
	}
	if _, lock, err := st.TFState(t.Context(), "qa/long/slow"); (err != nil && !errors.Is(err, store.ErrNotFound)) || lock.PID != second.cmd.Process.Pid || lock.Run != resumed.ID {
		t.Errorf("state lock of the resume: %+v, %v; want it taken over through replica %s", lock, err, rs.name[second])
	}
	if err := os.WriteFile(filepath.Join(out, "go"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	other.eventually("long applied", func() bool { return other.appliedFrom("qa/long", head) })

	var old apiRun
	if code := other.do("GET", "/api/v1/runs/"+runID, nil, &old); code != http.StatusOK || old.Status != "interrupted" {
		t.Errorf("the killed replica's run: %d %+v, want interrupted", code, old)
	}
	if n := stateResources(t, w, "long", "slow"); n != 1 {
		t.Errorf("%d resources in the store's state, want 1", n)
	}
	if _, lock, err := st.TFState(t.Context(), "qa/long/slow"); err != nil || lock.ID != "" {
		t.Errorf("state lock after the resume: %+v, %v; want released", lock, err)
	}
	// The killed replica's tool was ended before the resume ran: the
	// resource was created once.
	time.Sleep(300 * time.Millisecond) // an orphan would have seen "go" by now (it polls every 0.1s)
	if created := lines(t, filepath.Join(out, "created")); len(created) != 1 {
		t.Errorf("created %d times, want once: %v", len(created), created)
	}
}

// kill -9 of the leader: the drift schedule resumes on another replica.
func TestDriftSchedulesResumeOnAnotherReplicaWhenTheLeaderIsKilled(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	out := w.path("out")
	if err := os.MkdirAll(out, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(out, "go"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	repo := newGitRepo(t, map[string]string{"envs/modules/slow/main.tf": slowModule,
		"envs/sched.yaml": tfEnv("sched", out, "  drift: {schedule: \"@every 1s\", policy: alert}\n")})
	rs := startReplicas(t, w, []string{"a", "b", "c"},
		append(replicaArgs(repo, 2), "--drift-min-every", "100ms", "--drift-tick", "100ms"))
	a := rs.reps[0]
	a.eventually("sched provisioned", func() bool { e, _ := a.env("qa/sched"); return e.Status == "provisioned" })
	drifts := func(s *server) []apiRun {
		var p struct{ Items []apiRun }
		s.do("GET", "/api/v1/environments/qa/sched/runs", nil, &p)
		var d []apiRun
		for _, r := range p.Items {
			if r.Kind == "drift" && r.Source == "schedule" {
				d = append(d, r)
			}
		}
		return d
	}
	a.eventually("a scheduled drift check", func() bool { return len(drifts(a)) > 0 })
	lead := rs.leader()
	if lead == nil {
		t.Fatal("no replica says it leads")
	}
	rs.kill(lead)
	var alive *server
	for _, s := range rs.reps {
		if s != lead {
			alive = s
		}
	}
	seen := map[string]bool{}
	for _, r := range drifts(alive) {
		seen[r.ID] = true
	}
	// Two new checks that end: the first may meet the dead leader's lock.
	alive.eventually("scheduled drift checks after the leader's death", func() bool {
		n := 0
		for _, r := range drifts(alive) {
			if !seen[r.ID] && r.Status == "succeeded" {
				n++
			}
		}
		return n >= 2
	})
	if nl := rs.leader(); nl == nil || nl == lead {
		t.Errorf("no other replica says it leads after the leader was killed")
	}
	if created := lines(t, filepath.Join(out, "created")); len(created) != 1 {
		t.Errorf("created %d times, want once (drift checks only look): %v", len(created), created)
	}
}

// onAnotherMachine rewrites the host of key's state lock, as if the knit
// holding it ran on another machine (its PID means nothing here).
func onAnotherMachine(t *testing.T, dsn, key string) {
	t.Helper()
	conn, err := pgx.Connect(t.Context(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.WithoutCancel(t.Context()))
	tag, err := conn.Exec(t.Context(), `UPDATE tf_states SET lock_host = 'another-machine.invalid' WHERE key = $1 AND lock_id <> ''`, key)
	if err != nil || tag.RowsAffected() != 1 {
		t.Fatalf("move the state lock of %s to another machine: %v, %d rows", key, err, tag.RowsAffected())
	}
}
