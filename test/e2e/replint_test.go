package e2e

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

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
