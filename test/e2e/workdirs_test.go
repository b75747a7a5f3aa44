package e2e

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"knit.dev/knit/internal/testtools"
)

// copyTree copies the folder src (regular files only) to dst.
func copyTree(t *testing.T, src, dst string) {
	t.Helper()
	err := filepath.WalkDir(src, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, err := filepath.Rel(src, p)
		if err != nil {
			return err
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if err := os.MkdirAll(filepath.Join(dst, filepath.Dir(rel)), 0o755); err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), data, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// The example's app module writes its config with local_file into
// path.module, inside its work dir. A drift check right after apply is
// clean (the sync of the module no longer deletes that file first), and an
// edit of the file by hand is drift of exactly that resource.
func TestDriftOfTheExampleRightAfterApplyIsClean(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	copyTree(t, filepath.Join(repo, "examples", "webshop"), w.path("webshop"))
	w.ok("apply", "-f", "webshop/environment.yaml")

	r := w.knit("drift", "webshop/demo")
	if r.code != 0 || !strings.Contains(r.stdout, "5 in sync") {
		t.Fatalf("drift right after apply: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	// And again: a second check must not disturb what the first left.
	if r := w.knit("drift", "webshop/demo"); r.code != 0 {
		t.Fatalf("second drift check: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}

	conf := strings.TrimSpace(w.ok("output", "webshop/demo", "app", "config_file").stdout)
	if !strings.HasPrefix(conf, w.dataDir) {
		t.Fatalf("config file %q is not in the app's work dir", conf)
	}
	if err := os.WriteFile(conf, []byte("edited by hand\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	r = w.knit("drift", "webshop/demo", "-o", "json")
	if r.code != 2 {
		t.Fatalf("drift after editing %s: exit %d, want 2\n%s\n%s", conf, r.code, r.stdout, r.stderr)
	}
	var rep struct {
		Components []struct {
			Name, Status string
			Resources    []struct{ Address, Action string }
		}
	}
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
		t.Fatal(err)
	}
	var drifted []string
	for _, c := range rep.Components {
		if c.Status == "drifted" {
			for _, res := range c.Resources {
				drifted = append(drifted, c.Name+": "+res.Action+" "+res.Address)
			}
		}
	}
	// hashicorp/local 1.4.0 reads changed content as a deleted file.
	if strings.Join(drifted, ", ") != "app: create local_file.config" {
		t.Errorf("drifted: %v, want only app's local_file.config", drifted)
	}
}

// A module folder that is a symlink to a folder outside the environment's
// folder (here: knit's data dir, holding every team's work dirs) is refused
// by every command that reads the file, naming the link and its target,
// and nothing of the data dir is copied.
func TestASymlinkedModuleOutOfTheFolderIsRefused(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	// Another team's work dir, with a secret in it.
	w.write(map[string]string{"modules/file/main.tf": fileModule})
	w.writeFileEnv(envFile("victim", fileComp("f", "team secret", "")))
	w.ok("apply", "-f", "env.yaml")

	attacker := w.path("attacker")
	w.write(map[string]string{"attacker/env.yaml": `apiVersion: knit.dev/v1
kind: Environment
metadata: {name: thief}
spec:
  teamName: evil
  envName: thief
  autoApprove: true
  components:
    - name: grab
      type: terraform
      module: {source: ./leak}
`})
	if err := os.Symlink(w.dataDir, filepath.Join(attacker, "leak")); err != nil {
		t.Fatal(err)
	}
	realData, err := filepath.EvalSymlinks(w.dataDir)
	if err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"validate", "-f", "attacker/env.yaml"},
		{"plan", "-f", "attacker/env.yaml"},
		{"apply", "-f", "attacker/env.yaml"},
	} {
		r := w.knit(args...)
		out := r.stdout + r.stderr
		if r.code != 1 || !strings.Contains(out, "leak is a symlink to "+realData+", outside the environment's folder") {
			t.Errorf("knit %s: exit %d, want 1 naming the link and its target:\n%s", strings.Join(args, " "), r.code, out)
		}
	}
	if _, err := os.Stat(filepath.Join(w.dataDir, "work", "evil")); err == nil {
		t.Error("a work dir was made for the refused environment: the victim's files may be in it")
	}

	// A module folder inside the environment's folder, holding a symlink
	// out of it: the copy into the work dir refuses to follow it.
	w.write(map[string]string{"attacker/modules/inner/main.tf": `resource "terraform_data" "x" { input = "x" }` + "\n"})
	if err := os.Symlink(w.dataDir, filepath.Join(attacker, "modules/inner/data")); err != nil {
		t.Fatal(err)
	}
	env := strings.Replace(w.read("attacker/env.yaml"), "./leak", "./modules/inner", 1)
	w.write(map[string]string{"attacker/env.yaml": env})
	r := w.knit("plan", "-f", "attacker/env.yaml")
	if out := r.stdout + r.stderr; r.code != 1 || !strings.Contains(out, filepath.Join("modules", "inner", "data")+" is a symlink to "+realData+", outside") {
		t.Errorf("plan of a module holding a link out: exit %d, want 1 naming the link and its target:\n%s", r.code, out)
	}
	if entries, _ := os.ReadDir(filepath.Join(w.dataDir, "work", "evil", "thief", "grab", "module")); len(entries) > 0 {
		t.Errorf("the refused module was copied into its work dir: %v", entries)
	}
}

// A script component with a sensitive input (a 3-line PEM from an
// upstream sensitive output) and a sensitive output of its own, planned,
// gated, approved and applied: no file under the data dir holds either
// value, nor the PEM's secret line. Both values are computed at run time,
// so no source file (nor the revision knit stores) holds them.
func TestScriptSecretsAreNeverInTheDataDirInClear(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	bodySum := sha256.Sum256([]byte("knit-e2e-pem"))
	body := hex.EncodeToString(bodySum[:])
	pem := "-----BEGIN TEST KEY-----\n" + body + "\n-----END TEST KEY-----"
	tokenSum := sha256.Sum256([]byte(pem))
	token := hex.EncodeToString(tokenSum[:])
	w.write(map[string]string{"env.yaml": `apiVersion: knit.dev/v1
kind: Environment
metadata: {name: pem}
spec:
  teamName: qa
  envName: pem
  autoApprove: true
  components:
    - name: ca
      type: script
      outputs: [{name: key, sensitive: true}]
      script:
        apply: |
          body=$(printf knit-e2e-pem | sha256sum | cut -c1-64)
          printf '{"key": "-----BEGIN TEST KEY-----\\n%s\\n-----END TEST KEY-----"}' "$body"
    - name: app
      type: script
      autoApprove: false
      variables: [{name: key, valueFrom: ca.key}]
      outputs: [{name: token, sensitive: true}, {name: lines}]
      script:
        apply: |
          token=$(printf '%s' "$KNIT_VAR_KEY" | sha256sum | cut -c1-64)
          lines=$(printf '%s\n' "$KNIT_VAR_KEY" | wc -l | tr -d ' ')
          printf '{"token": "%s", "lines": %s}' "$token" "$lines"
`})
	w.ok("plan", "-f", "env.yaml")
	if r := w.knit("apply", "-f", "env.yaml"); r.code != 3 {
		t.Fatalf("apply: exit %d, want 3 (the gate)\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	w.ok("approve", "qa/pem", "app")
	if got := strings.TrimSpace(w.ok("output", "qa/pem", "app", "token", "--show-sensitive").stdout); got != token {
		t.Fatalf("token = %q, want the hash of the PEM the script got (%s)", got, token)
	}
	if got := strings.TrimSpace(w.ok("output", "qa/pem", "app", "lines").stdout); got != "3" {
		t.Errorf("the PEM the script got had %s lines, want 3", got)
	}
	holding, checked := testtools.FilesHolding(t, w.dataDir, body, pem, token)
	for text, files := range holding {
		for _, f := range files {
			t.Errorf("%s holds %.20q… in clear", f, text)
		}
	}
	if checked < 5 {
		t.Errorf("only %d files checked", checked)
	}
	for _, f := range []string{"work/qa/pem/app/plan.json", "work/qa/pem/app/outputs.json"} {
		if _, err := os.Stat(filepath.Join(w.dataDir, f)); err != nil {
			t.Errorf("%s: %v (the test no longer checks the work files)", f, err)
		}
	}
}
