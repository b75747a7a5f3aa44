package e2e

import (
	"crypto/sha256"
	"encoding/hex"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"knit.dev/knit/internal/store"
	"knit.dev/knit/internal/testtools/pgtest"
)

// sharedModules: gen reads a secret from a file outside the spec into a
// sensitive output; db keeps it, as a sensitive input, in its state.
var sharedModules = map[string]string{
	"modules/gen/main.tf": `
variable "path" { type = string }
output "password" {
  value     = trimspace(file(var.path))
  sensitive = true
}
`,
	"modules/db/main.tf": `
variable "password" {
  type      = string
  sensitive = true
}
variable "n" { type = number }
resource "terraform_data" "db" { input = { password = var.password, n = var.n } }
output "n" { value = terraform_data.db.output.n }
`,
}

func sharedEnv(w *world) string {
	return `apiVersion: knit.dev/v1
kind: Environment
metadata: {name: shared}
spec:
  teamName: qa
  envName: shared
  components:
    - name: gen
      type: terraform
      autoApprove: true
      module: {source: ./modules/gen}
      variables: [{name: path, value: "` + w.path("vault.txt") + `"}]
      outputs: [{name: password, sensitive: true}]
    - name: db
      type: terraform
      autoApprove: false
      dependsOn: [gen]
      module: {source: ./modules/db}
      variables:
        - {name: password, valueFrom: gen.password}
        - {name: n, value: 1}
`
}

// replicaB is a second knit on the world's PostgreSQL store: a data dir
// of its own holding the same knit.key (every replica needs it).
func replicaB(t *testing.T, w *world) []string {
	t.Helper()
	dir := filepath.Join(w.dir, ".knit-b")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	key, err := os.ReadFile(filepath.Join(w.dataDir, "knit.key"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "knit.key"), key, 0o600); err != nil {
		t.Fatal(err)
	}
	return []string{"KNIT_DATA_DIR=" + dir}
}

// TestReplicasShareTerraformStateAndPlans: two knits (data dirs of their
// own) on one PostgreSQL store. A plans a gated component; its work dirs
// and kept plans are then deleted. B approves it and applies the same
// bytes (the approval's checksum), from the store, laying out its own
// work dirs from the revision. The state B wrote is the one A reads: a
// drift check on either shows everything in sync, with A's work dirs gone
// again. The secret that flows into state is nowhere in clear: not in a
// dump of the database, not in either data dir.
func TestReplicasShareTerraformStateAndPlans(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	c := pgtest.Start(t)
	dsn := c.DB(t)
	w.env = append(without(w.env, "KNIT_STORE_DSN="), "KNIT_STORE_DSN="+dsn)
	secret := "tfsecret-" + randomHex(t)
	w.write(sharedModules)
	w.write(map[string]string{"vault.txt": secret + "\n"})
	w.write(map[string]string{"env.yaml": sharedEnv(w)})

	if r := w.knit("apply", "-f", "env.yaml"); r.code != 3 {
		t.Fatalf("apply on A: exit %d, want 3 (awaiting approval)\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	for _, d := range []string{"work", "approvals"} { // A's disk is a cache
		if err := os.RemoveAll(filepath.Join(w.dataDir, d)); err != nil {
			t.Fatal(err)
		}
	}
	st := w.openStore()
	waiting, err := st.OpenApproval(t.Context(), "qa/shared", "db")
	if err != nil {
		t.Fatal(err)
	}

	b := replicaB(t, w)
	if r := w.knitWith(b, "approve", "qa/shared", "db", "--reason", "on B"); r.code != 0 {
		t.Fatalf("approve on B: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	a, err := st.Approval(t.Context(), waiting.ID)
	if err != nil || a.Status != store.ApprovalApplied {
		t.Fatalf("approval #%d: %+v, %v; want applied", waiting.ID, a, err)
	}
	applied, err := os.ReadFile(filepath.Join(w.dir, ".knit-b", "approvals", "qa", "shared", filepath.Base(a.PlanFile)))
	if err != nil {
		t.Fatalf("B applied no plan file of its own: %v", err)
	}
	if sum := sha256.Sum256(applied); hex.EncodeToString(sum[:]) != a.PlanChecksum {
		t.Errorf("B applied a plan with checksum %x, the approval is of %s", sum, a.PlanChecksum)
	}

	if r := w.knitWith(b, "drift", "qa/shared"); r.code != 0 || !strings.Contains(r.stdout, "2 in sync") {
		t.Errorf("drift on B: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	if err := os.RemoveAll(filepath.Join(w.dataDir, "work")); err != nil {
		t.Fatal(err)
	}
	if r := w.knit("drift", "qa/shared"); r.code != 0 || !strings.Contains(r.stdout, "2 in sync") {
		t.Errorf("drift on A (work dirs deleted): exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	if n, err := st.CountTFStates(t.Context()); err != nil || n != 2 {
		t.Errorf("states in the store: %d, %v; want 2", n, err)
	}

	dump := string(c.Dump(t, pgtest.DBName(t, dsn)))
	if !strings.Contains(dump, "qa/shared/db") {
		t.Fatal("the dump holds no state of qa/shared/db: the test looks in the wrong database")
	}
	secretFree(t, "pg_dump of the store", []byte(dump), secret)
	for _, dir := range []string{w.dataDir, filepath.Join(w.dir, ".knit-b")} {
		noSecretIn(t, dir, secret)
	}
}

// noSecretIn fails for every file under dir holding secret (in any of
// secretForms), and when dir holds too few files to be the right one.
func noSecretIn(t *testing.T, dir, secret string) {
	t.Helper()
	if checked := noSecretUnder(t, dir, secret); checked < 5 {
		t.Errorf("only %d files under %s", checked, dir)
	}
}

// noSecretUnder fails for every file under dir holding secret, and says
// how many files it read.
func noSecretUnder(t *testing.T, dir, secret string) int {
	t.Helper()
	checked := 0
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !d.Type().IsRegular() {
			return err
		}
		checked++
		if b, err := os.ReadFile(p); err == nil {
			secretFree(t, p, b, secret)
		}
		return nil
	})
	return checked
}

// TestUpgradeMovesLocalStateIntoTheStore: a data dir from a SQLite knit
// (state in work dirs), copied into PostgreSQL with knit store migrate,
// loses no state: the first run on PostgreSQL moves each work dir's state
// into the store (kept on disk as terraform.tfstate.imported), and a drift
// check finds everything in sync, not missing.
func TestUpgradeMovesLocalStateIntoTheStore(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	w.env = without(w.env, "KNIT_STORE_DSN=")
	secret := "tfsecret-" + randomHex(t)
	w.write(sharedModules)
	w.write(map[string]string{"vault.txt": secret + "\n"})
	w.write(map[string]string{"env.yaml": sharedEnv(w)})
	w.ok("apply", "-f", "env.yaml", "--auto-approve")
	local := filepath.Join(w.dataDir, "work", "qa", "shared", "db", "terraform.tfstate")
	if _, err := os.Stat(local); err != nil {
		t.Fatalf("the SQLite knit kept no local state: %v", err)
	}

	c := pgtest.Start(t)
	dsn := c.DB(t)
	w.ok("store", "migrate", "--to", dsn)
	w.env = append(w.env, "KNIT_STORE_DSN="+dsn)
	if r := w.knit("drift", "qa/shared"); r.code != 0 || !strings.Contains(r.stdout, "2 in sync") {
		t.Fatalf("drift on PostgreSQL after the upgrade: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	if _, err := os.Stat(local + ".imported"); err != nil {
		t.Errorf("the local state was not moved aside: %v", err)
	}
	if n, err := w.openStore().CountTFStates(t.Context()); err != nil || n != 2 {
		t.Errorf("states in the store after the upgrade: %d, %v; want 2", n, err)
	}
	// The imported state is the real one: a replica with no work dirs sees it.
	if r := w.knitWith(replicaB(t, w), "drift", "qa/shared"); r.code != 0 || !strings.Contains(r.stdout, "2 in sync") {
		t.Errorf("drift on a fresh replica: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
}
