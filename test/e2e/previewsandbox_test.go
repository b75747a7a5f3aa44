package e2e

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// sandboxReachable lets the previews' sandbox user (nobody) reach the
// world's wrapper tools and logs: the test's temporary folders become
// traversable (0711, never listable); the data dir stays knit's alone
// (knit serve makes it 0700).
func (w *world) sandboxReachable() {
	w.t.Helper()
	for d := w.dir; d != os.TempDir() && d != "/"; d = filepath.Dir(d) {
		if err := os.Chmod(d, 0o711); err != nil {
			w.t.Fatal(err)
		}
	}
	for _, f := range []string{"tools.log", "calls.log"} {
		if err := os.WriteFile(w.path(f), nil, 0o666); err != nil {
			w.t.Fatal(err)
		}
		_ = os.Chmod(w.path(f), 0o666)
	}
}

// marksDir is a folder the sandbox's user may write, for a branch's code
// to leave what it saw.
func marksDir(t *testing.T) string {
	t.Helper()
	d, err := os.MkdirTemp("", "knit-marks-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(d) })
	if err := os.Chmod(d, 0o777); err != nil {
		t.Fatal(err)
	}
	return d
}

// envTofu makes the world's tofu a wrapper that records, for each command
// of a preview (its work dir outside the data dir), the user it runs as
// and whether its environment holds a credential or a key, before running
// the real tofu.
func (w *world) envTofu(marks string) {
	w.t.Helper()
	bin := filepath.Join(marks, "tofu")
	script := fmt.Sprintf(`#!/bin/sh
case "$PWD$1" in %s*|*version) ;; *) { echo "$(id -u) $1"; env | grep -E '^(TF_HTTP_|TF_KNIT_|TF_ENCRYPTION|KNIT_)' | sed 's/=.*//'; } >> %s/tofu.log ;; esac
exec %s "$@"
`, w.dataDir, marks, tofuBin)
	if err := os.WriteFile(bin, []byte(script), 0o755); err != nil {
		w.t.Fatal(err)
	}
	w.env = append(w.env, "KNIT_TF_BINARY="+bin, "KNIT_TF_CLI_CONFIG="+filepath.Join(repo, ".tools", "tofurc"))
}

// TestABranchsCodeRunsWithNoPower is issue 35's first attack, each part
// of it on a real server previewing a branch with --preview-scripts:
//   - a script plan that runs knit's own binary to mint an admin token
//     (`token create` on the data dir) mints none;
//   - it runs as another user (id -u), with none of knit's environment;
//   - knit writes nothing through a link the script plants in its work dir;
//   - a branch editing another team's environment gets that team's
//     sensitive upstream output only as a placeholder in KNIT_VAR_*, and
//     the preview says so;
//   - a module reading knit.key (filebase64) fails, and the key is
//     nowhere in the preview;
//   - the preview's tofu runs as another user, with no state credential or
//     key (on PostgreSQL too: KNIT_E2E_STORE=postgres), and the state is
//     unchanged.
func TestABranchsCodeRunsWithNoPower(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	w.sandboxReachable()
	marks := marksDir(t)
	w.envTofu(marks)
	hook := newHookReceiver(t)
	opsEnv := func(extra string) string {
		return `apiVersion: knit.dev/v1
kind: Environment
metadata: {name: ops-db}
spec:
  teamName: ops
  envName: db
  autoApprove: true
  components:
    - name: db
      type: terraform
      module: {source: ./modules/secret}
      variables: [{name: name, value: db}]
      outputs: [{name: id}, {name: pw, sensitive: true}]
` + extra
	}
	repo := newGitRepo(t, map[string]string{
		"envs/modules/counted/main.tf": countedModule,
		"envs/modules/secret/main.tf":  countedModule + secretOutput,
		"envs/db.yaml":                 opsEnv(""),
		"envs/app.yaml":                previewEnv("shop", "app", "v1"),
	})
	first := git(t, repo.work, "rev-parse", "HEAD")
	s := w.startServer(gitServerArgs(repo, "--preview-branches", "feature/*", "--preview-scripts",
		"--preview-dir", filepath.Join(marks, "sandbox"), "--config", w.notifyConfig("notify.yaml", hook.url))...)
	s.eventually("ops/db applied from the first commit", func() bool { return s.appliedFrom("ops/db", first) })
	r := w.knitWith([]string{"KNIT_SERVER=" + s.url, "KNIT_TOKEN=" + s.token}, "output", "ops/db", "db", "pw", "--show-sensitive")
	secret := strings.TrimSpace(r.stdout)
	if !strings.HasPrefix(secret, "pw-") {
		t.Fatalf("ops/db's secret output = %q", secret)
	}
	stateBefore := w.componentState("ops/db", "db")
	key, err := os.ReadFile(filepath.Join(w.dataDir, "knit.key"))
	if err != nil {
		t.Fatal(err)
	}
	keyB64 := base64.StdEncoding.EncodeToString(key)

	// The branch: another team's file with a script that mints a token,
	// says who it is and what it got; and a module that reads knit.key.
	// knit's binary where the sandbox's user may run it: the attack is
	// tried for real.
	bin, err := os.ReadFile(knitBin)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(marks, "knit"), bin, 0o755); err != nil {
		t.Fatal(err)
	}
	// A file of knit's user's the script links its plan file to: knit must
	// not write through the link.
	canary := filepath.Join(marks, "canary")
	if err := os.WriteFile(canary, []byte("CANARY"), 0o644); err != nil {
		t.Fatal(err)
	}
	mint := fmt.Sprintf(`%s token create mallory-admin --role admin --data-dir %s > %s/mint.out 2>&1; id -u > %s/uid; env > %s/env; ln -sf %s plan.json; exit 2`,
		filepath.Join(marks, "knit"), w.dataDir, marks, marks, marks, canary)
	leak := opsEnv(`    - name: leak
      type: script
      dependsOn: [db]
      variables: [{name: pw, valueFrom: db.pw}]
      script: {plan: "` + strings.ReplaceAll(mint, `"`, `\"`) + `", apply: "echo '{}'"}
`)
	head := repo.pushBranch("feature/power", map[string]string{
		"envs/db.yaml": leak,
		"envs/modules/key/main.tf": fmt.Sprintf("variable \"name\" {}\nvariable \"extra\" {}\noutput \"k\" { value = filebase64(%q) }\n",
			filepath.Join(w.dataDir, "knit.key")),
		"envs/app.yaml": strings.Replace(previewEnv("shop", "app", "v2"), "./modules/counted", "./modules/key", 1),
	})
	md := s.previewMarkdown(hook, head)

	// No token was minted.
	if r := w.ok("token", "list"); strings.Contains(r.stdout, "mallory") {
		t.Errorf("a branch's script minted a token:\n%s", r.stdout)
	}
	if got, _ := os.ReadFile(filepath.Join(marks, "mint.out")); len(got) == 0 {
		t.Errorf("the script's plan did not run (no mint.out): the attack was not tried")
	}
	if got, _ := os.ReadFile(canary); string(got) != "CANARY" {
		t.Errorf("knit wrote through a link the branch's script planted: the canary holds %q", got)
	}
	// It ran as another user, with nothing of knit's.
	if uid, _ := os.ReadFile(filepath.Join(marks, "uid")); strings.TrimSpace(string(uid)) != "65534" {
		t.Errorf("the branch's script ran as uid %q, want 65534 (nobody)", strings.TrimSpace(string(uid)))
	}
	env, _ := os.ReadFile(filepath.Join(marks, "env"))
	if strings.Contains(string(env), secret) || strings.Contains(string(env), "TF_HTTP_PASSWORD") ||
		strings.Contains(string(env), "KNIT_STORE") || strings.Contains(string(env), "KNIT_DATA_DIR") {
		t.Errorf("the branch's script saw a secret or knit's environment:\n%s", env)
	}
	if !strings.Contains(string(env), "KNIT_VAR_PW=knit-preview-placeholder-pw") {
		t.Errorf("the script did not get a placeholder for the sensitive input:\n%s", env)
	}
	// The preview says which inputs were placeholders.
	var raw []struct {
		Env, Status, Error string
		Components         []struct {
			Name         string
			Placeholders []string
		}
	}
	s.do("GET", "/api/v1/previews?branch=feature/power", nil, &raw)
	placeheld := false
	for _, p := range raw {
		for _, c := range p.Components {
			placeheld = placeheld || (p.Env == "ops/db" && c.Name == "leak" && strings.Join(c.Placeholders, ",") == "pw")
		}
	}
	if !placeheld {
		t.Errorf("the preview does not say leak's pw was a placeholder: %+v", raw)
	}
	if !strings.Contains(md, "placeholders for its sensitive inputs: pw") {
		t.Errorf("the Markdown does not say leak's pw was a placeholder:\n%s", md)
	}
	// knit.key was not readable by the preview's tofu.
	record, _ := json.Marshal(raw)
	var runs json.RawMessage
	s.do("GET", "/api/v1/environments/shop/app/runs", nil, &runs)
	for what, text := range map[string]string{"the preview": string(record), "the Markdown": md, "the runs": string(runs), "the log": s.logText()} {
		if strings.Contains(text, keyB64) || strings.Contains(text, secret) {
			t.Errorf("%s holds knit.key or ops' secret:\n%s", what, text)
		}
	}
	var logs json.RawMessage
	s.do("GET", "/api/v1/environments/shop/app/components/app/logs", nil, &logs)
	for _, p := range raw {
		if p.Env == "shop/app" && (p.Status != "failed" || !strings.Contains(string(logs), "permission denied")) {
			t.Errorf("shop/app's preview = %+v, want failed: knit.key not readable\n%s", p, logs)
		}
	}
	if w.componentState("ops/db", "db") != stateBefore {
		t.Errorf("ops/db's state changed with the preview")
	}
	// The preview's tofu ran as nobody, with no credential and no key.
	log, _ := os.ReadFile(filepath.Join(marks, "tofu.log"))
	if !strings.Contains(string(log), "65534 plan") {
		t.Errorf("no preview tofu plan ran as uid 65534:\n%s", log)
	}
	for _, l := range strings.Split(strings.TrimSpace(string(log)), "\n") {
		if l != "" && !strings.HasPrefix(l, "65534 ") {
			t.Errorf("a preview's tofu held %s (or ran as root)", l)
		}
	}
}

// componentState is the stored state of env's component: in the store on
// PostgreSQL, else the work dir's file.
func (w *world) componentState(env, comp string) string {
	w.t.Helper()
	if w.dsn() == "" {
		return w.read(filepath.Join(".knit", "work", env, comp, "terraform.tfstate"))
	}
	data, _, err := w.openStore().TFState(context.Background(), env+"/"+comp)
	if err != nil {
		w.t.Fatal(err)
	}
	return string(data)
}
