package terraform_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"knit.dev/knit/internal/runner/terraform"
	"knit.dev/knit/internal/testtools"
)

// scrubbed is a module whose state holds sensitive values every way
// OpenTofu marks them: a whole attribute, an object's attribute, a list
// element, a provider attribute with a private blob, a sensitive output,
// and terraform_data's unmarked copy of its input.
const scrubbed = `
variable "pw" {
  type      = string
  sensitive = true
}
variable "obj" {
  type      = object({ a = string, n = number, b = bool, l = list(string) })
  sensitive = true
}
resource "terraform_data" "db" {
  input = { password = var.pw, user = "admin-user", port = 5432 }
}
resource "terraform_data" "whole" { input = var.obj }
resource "terraform_data" "listed" { input = ["public-value", var.pw] }
resource "local_file" "f" {
  content  = var.pw
  filename = "${path.module}/out.txt"
}
output "pw" {
  value     = var.pw
  sensitive = true
}
output "user" { value = terraform_data.db.output.user }
`

// TestScrubStateHidesEverySensitiveValueOfARealState applies scrubbed
// with real tofu, scrubs its state, and plans against the scrubbed copy
// as a sandboxed preview does (-lock=false -refresh=false): no secret is
// left, placeholders of each type are there, what is not sensitive is
// kept, the private blob is gone, and tofu takes the state.
func TestScrubStateHidesEverySensitiveValueOfARealState(t *testing.T) {
	tofu := testtools.Tofu(t)
	dir := t.TempDir()
	testtools.WriteFiles(t, dir, map[string]string{"main.tf": scrubbed})
	run := func(args ...string) string {
		t.Helper()
		cmd := exec.Command(tofu.Path, args...)
		cmd.Dir = dir
		cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + dir, "TF_IN_AUTOMATION=1", "TF_CLI_CONFIG_FILE=" + tofu.CLIConfig}
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("tofu %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	vars := []string{"-input=false", "-no-color", "-var", "pw=SECRET-PASSWORD",
		"-var", `obj={a="SECRET-A-VALUE",n=42,b=true,l=["SECRET-L-VALUE"]}`}
	run("init", "-input=false", "-no-color")
	run(append([]string{"apply", "-auto-approve"}, vars...)...)
	state, err := os.ReadFile(filepath.Join(dir, "terraform.tfstate"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"type": "index"`, `"private": "`, `"SECRET-PASSWORD"`} {
		if !strings.Contains(string(state), want) {
			t.Fatalf("the real state has no %s: the test proves nothing\n%s", want, state)
		}
	}
	got, err := terraform.ScrubState(state)
	if err != nil {
		t.Fatal(err)
	}
	text := string(got)
	for _, secret := range []string{"SECRET-PASSWORD", "SECRET-A-VALUE", "SECRET-L-VALUE", `"n": 42`, `"b": true`, "private"} {
		if strings.Contains(text, secret) {
			t.Errorf("the scrubbed state still holds %s:\n%s", secret, text)
		}
	}
	for _, kept := range []string{`"admin-user"`, `"public-value"`, `5432`, `"port": "number"`, `"lineage"`} {
		if !strings.Contains(text, kept) {
			t.Errorf("the scrubbed state lost %s, which is not sensitive:\n%s", kept, text)
		}
	}
	for _, placeholder := range []string{`"knit-preview-placeholder"`, `"n": 0`, `"b": false`} {
		if !strings.Contains(text, placeholder) {
			t.Errorf("the scrubbed state has no %s:\n%s", placeholder, text)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "terraform.tfstate"), got, 0o600); err != nil {
		t.Fatal(err)
	}
	plan := run(append([]string{"plan", "-lock=false", "-refresh=false"}, vars...)...)
	if strings.Contains(plan, "SECRET") {
		t.Errorf("the plan shows a secret:\n%s", plan)
	}
}

// TestScrubStateRefusesWhatIsNoState: a state that is not JSON is an
// error, never passed on as it is.
func TestScrubStateRefusesWhatIsNoState(t *testing.T) {
	if _, err := terraform.ScrubState([]byte("not json")); err == nil {
		t.Error("a state that is not JSON was scrubbed")
	}
}
