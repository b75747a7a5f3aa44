package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// notes are heldSecret's notes: the branch changes them to the password.
const notes = `
locals {
  by_input  = "v1"
  by_output = "v1"
  by_file   = "v1"
}
`

// heldSecret is a module whose state holds a sensitive value nobody wrote
// in git: a password made at apply, marked sensitive in the state.
const heldSecret = `
variable "name" { type = string }
resource "terraform_data" "by_input"  { input = local.by_input }
resource "terraform_data" "by_output" { input = local.by_output }
resource "terraform_data" "by_file"   { input = local.by_file }
resource "terraform_data" "db" {
  input = { password = sensitive("pw-${uuid()}"), user = "admin" }
  lifecycle { ignore_changes = [input] }
}
output "pw" {
  value     = terraform_data.db.output.password
  sensitive = true
}
`

// TestAPreviewSeesNoSensitiveValueOfTheState is issue 35's "receives no
// real sensitive value" for the state a sandboxed plan compares with: a
// branch changes resources' inputs to un-marked copies of the password held in ops/db's state
// (by its sensitive input path, by the unmarked copy of it in the
// resource's output, and by reading the state copy's file): the real
// password is nowhere in the preview record, the API answer or the
// Markdown; the placeholder is.
func TestAPreviewSeesNoSensitiveValueOfTheState(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	w.sandboxReachable()
	marks := marksDir(t)
	w.envTofu(marks)
	hook := newHookReceiver(t)
	env := `apiVersion: knit.dev/v1
kind: Environment
metadata: {name: ops-db}
spec:
  teamName: ops
  envName: db
  autoApprove: true
  components:
    - name: db
      type: terraform
      module: {source: ./modules/held}
      variables: [{name: name, value: db}]
      outputs: [{name: pw, sensitive: true}]
`
	repo := newGitRepo(t, map[string]string{
		"envs/modules/held/main.tf":  heldSecret,
		"envs/modules/held/notes.tf": notes,
		"envs/db.yaml":               env,
	})
	first := git(t, repo.work, "rev-parse", "HEAD")
	s := w.startServer(gitServerArgs(repo, "--preview-branches", "feature/*",
		"--preview-dir", filepath.Join(marks, "sandbox"), "--config", w.notifyConfig("notify.yaml", hook.url))...)
	s.eventually("ops/db applied from the first commit", func() bool { return s.appliedFrom("ops/db", first) })
	r := w.knitWith([]string{"KNIT_SERVER=" + s.url, "KNIT_TOKEN=" + s.token}, "output", "ops/db", "db", "pw", "--show-sensitive")
	secret := strings.TrimSpace(r.stdout)
	if !strings.HasPrefix(secret, "pw-") {
		t.Fatalf("ops/db's secret output = %q", secret)
	}

	head := repo.pushBranch("feature/leak", map[string]string{
		"envs/modules/held/notes.tf": `
locals {
  by_input  = nonsensitive(terraform_data.db.input.password)
  by_output = nonsensitive(terraform_data.db.output.password)
  by_file   = file("${path.cwd}/../terraform.tfstate")
}
`,
	})
	md := s.previewMarkdown(hook, head)
	var api json.RawMessage
	s.do("GET", "/api/v1/previews?branch=feature/leak", nil, &api)
	var raw []struct{ Env, Status, Error string }
	if err := json.Unmarshal(api, &raw); err != nil {
		t.Fatal(err)
	}
	var logs json.RawMessage
	s.do("GET", "/api/v1/environments/ops/db/components/db/logs", nil, &logs)
	for _, p := range raw {
		if p.Env == "ops/db" && p.Status == "failed" {
			t.Fatalf("ops/db's preview failed: %s\n%s", p.Error, logs)
		}
	}
	for what, text := range map[string]string{"the preview": string(api), "the Markdown": md,
		"the component's logs": string(logs), "the log": s.logText()} {
		if strings.Contains(text, secret) {
			t.Errorf("%s holds ops/db's password %s:\n%s", what, secret, text)
		}
	}
	if !strings.Contains(string(api)+md, "knit-preview-placeholder") {
		t.Errorf("the preview shows no placeholder for the password:\n%s\n%s", api, md)
	}
	if got, _ := os.ReadFile(filepath.Join(marks, "tofu.log")); !strings.Contains(string(got), "65534 plan") {
		t.Errorf("no preview tofu plan ran sandboxed:\n%s", got)
	}
}

// previewMarkdown waits for hook's preview.ready of commit and returns its
// Markdown.
func (s *server) previewMarkdown(hook *hookReceiver, commit string) string {
	s.t.Helper()
	var md string
	s.eventually("preview.ready of the branch", func() bool {
		for _, ev := range hook.of("preview.ready") {
			if ev.Commit == commit {
				md = ev.Markdown
				return true
			}
		}
		return false
	})
	return md
}
