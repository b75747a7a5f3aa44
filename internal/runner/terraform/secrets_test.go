package terraform_test

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"knit.dev/knit/internal/runner"
	"knit.dev/knit/internal/runner/terraform"
	"knit.dev/knit/internal/testtools"
)

const secret = "SECRET-xyz"

// unencryptedWarning starts what OpenTofu prints when an unencrypted
// method is configured.
const unencryptedWarning = "Unencrypted method configured"

// plainModule has one resource and one output, nothing sensitive.
var plainModule = map[string]string{
	"mod/main.tf": `
variable "n" { type = number }
resource "terraform_data" "r" { input = var.n }
output "n" { value = terraform_data.r.output }
`,
}

// secretModule keeps its sensitive inputs in state (terraform_data's input
// and output), outputs one of them as a sensitive output, and writes the
// environment its provisioner sees to a file.
var secretModule = map[string]string{
	"mod/main.tf": `
variable "password" {
  type      = string
  sensitive = true
}
variable "settings" {
  type      = any
  sensitive = true
}
variable "envfile" { type = string }
resource "terraform_data" "db" {
  input = { password = var.password, settings = var.settings }
  provisioner "local-exec" {
    command = "env > ${var.envfile}"
  }
}
output "password" {
  value     = terraform_data.db.output.password
  sensitive = true
}
output "settings" {
  value     = terraform_data.db.output.settings
  sensitive = true
}
`,
}

// encryptedFixture is a fixture whose runner encrypts state and plans.
func encryptedFixture(t *testing.T, bin terraform.Binary, files map[string]string) *fixture {
	t.Helper()
	f := newFixture(t, bin, files, localModule("mod"))
	f.r = terraform.New(bin, terraform.Options{DataDir: f.data, ToolVersion: toolVersion, EncryptionKey: testKey})
	return f
}

var testKey = bytes.Repeat([]byte{7}, 32)

// grepData fails the test for every file under dir that holds s.
func grepData(t *testing.T, dir, s string) {
	t.Helper()
	holding, checked := testtools.FilesHolding(t, dir, s)
	for _, rel := range holding[s] {
		t.Errorf("%s holds %q", rel, s)
	}
	if checked < 5 {
		t.Errorf("only %d files checked under %s", checked, dir)
	}
}

// TestNoSecretOnDisk: a component whose sensitive inputs end up in its state
// leaves them nowhere in the data dir in clear, through a gated plan and
// apply (the saved plan holds the inputs) and through the one-step path.
// The tool still receives them intact, a value with template sequences too,
// and knit's own environment (KNIT_TOKEN) never reaches it.
func TestNoSecretOnDisk(t *testing.T) {
	t.Setenv("KNIT_TOKEN", "knit-token-must-not-leak")
	t.Setenv("UNLISTED_SECRET", "unlisted-must-not-leak")
	tofu := testtools.Tofu(t)
	for _, oneStep := range []bool{false, true} {
		f := encryptedFixture(t, tofu, secretModule)
		f.c.Sensitive = map[string]bool{"password": true, "settings": true}
		envFile := filepath.Join(t.TempDir(), "tool.env")
		settings := map[string]any{"dsn": "postgres://u:" + secret + "@db/${x}", "port": 5432}
		in := runner.Inputs{"password": secret, "settings": settings, "envfile": envFile}

		var out runner.Outputs
		if oneStep {
			var err error
			if _, out, err = f.r.PlanApply(context.Background(), f.c, in); err != nil {
				t.Fatalf("PlanApply: %v\n%s", err, f.log)
			}
		} else {
			p := f.plan(in, runner.PlanOptions{})
			if !p.HasChanges() {
				t.Fatalf("plan has no changes: %+v", p)
			}
			out = f.apply(p)
			// Plans made since hold the inputs too.
			f.plan(in, runner.PlanOptions{Destroy: true})
		}
		if out["password"].Value != secret || !out["password"].Sensitive {
			t.Errorf("password output = %+v, want the secret, sensitive", out["password"])
		}
		if got, _ := out["settings"].Value.(map[string]any); got["dsn"] != settings["dsn"] || got["port"] != float64(5432) {
			t.Errorf("settings output = %#v, want %#v", out["settings"].Value, settings)
		}
		state := readFile(t, filepath.Join(f.c.WorkDir, "terraform.tfstate"))
		if !strings.Contains(state, `"encrypted_data"`) {
			t.Errorf("state is not encrypted:\n%s", state)
		}
		grepData(t, f.data, secret)
		if strings.Contains(f.log.String(), unencryptedWarning) {
			t.Errorf("a run of an encrypted component warns of an unencrypted method:\n%s", f.log)
		}

		env := readFile(t, envFile)
		for _, leak := range []string{"knit-token-must-not-leak", "unlisted-must-not-leak"} {
			if strings.Contains(env, leak) {
				t.Errorf("the provisioner's environment holds %s", leak)
			}
		}
		if !strings.Contains(env, "PATH=") {
			t.Errorf("the provisioner's environment lacks PATH:\n%s", env)
		}
	}
}

// TestPlaintextStateMigrates: a data dir from before encryption keeps
// working; its state is written back encrypted.
func TestPlaintextStateMigrates(t *testing.T) {
	t.Parallel()
	tofu := testtools.Tofu(t)
	f := newFixture(t, tofu, plainModule, localModule("mod"))
	f.planApply(runner.Inputs{"n": 1})
	statePath := filepath.Join(f.c.WorkDir, "terraform.tfstate")
	if strings.Contains(readFile(t, statePath), "encrypted_data") {
		t.Fatal("state encrypted without a key")
	}
	f.r = terraform.New(tofu, terraform.Options{DataDir: f.data, ToolVersion: toolVersion, EncryptionKey: testKey})
	if out, err := f.r.Outputs(context.Background(), f.c); err != nil || out["n"].Value != float64(1) {
		t.Fatalf("Outputs of plaintext state with encryption on = %v, %v\n%s", out, err, f.log)
	}
	if p := f.plan(runner.Inputs{"n": 1}, runner.PlanOptions{}); p.HasChanges() {
		t.Errorf("plan of migrated state has changes: %+v", p)
	}
	f.planApply(runner.Inputs{"n": 2})
	if !strings.Contains(readFile(t, statePath), "encrypted_data") {
		t.Error("state not encrypted after the first apply with a key")
	}
	migrated := f.log.Len()
	if p := f.plan(runner.Inputs{"n": 2}, runner.PlanOptions{}); p.HasChanges() {
		t.Errorf("plan after migration has changes: %+v", p)
	}
	f.planApply(runner.Inputs{"n": 3})
	if _, err := f.r.Outputs(context.Background(), f.c); err != nil {
		t.Fatalf("Outputs: %v", err)
	}
	// Only the migration may warn that a plaintext method is configured.
	if after := f.log.String()[migrated:]; strings.Contains(after, unencryptedWarning) {
		t.Errorf("runs after the migration warn of an unencrypted method:\n%s", after)
	}
	// OpenTofu with knit's key reads it.
	cmd := exec.Command(tofu.Path, "state", "list", "-state="+statePath)
	cmd.Dir = f.moduleFile(".")
	cmd.Env = append(append(os.Environ(), "TF_CLI_CONFIG_FILE="+tofu.CLIConfig), terraform.EncryptionEnv(testKey)...)
	if out, err := cmd.CombinedOutput(); err != nil || strings.TrimSpace(string(out)) != "terraform_data.r" {
		t.Errorf("tofu state list with knit's key: %v\n%s", err, out)
	}
}

// TestModuleKeepsItsOwnEncryption: a module that configures encryption, or
// a backend that is not local, is left to do so; a resource's nested block
// that is merely called "encryption" is not mistaken for that.
func TestModuleKeepsItsOwnEncryption(t *testing.T) {
	bin, logs := fakeTool(t, fakeCommands)
	for _, tc := range []struct {
		name, main string
		knit       bool
	}{
		{"plain", `resource "terraform_data" "r" {}`, true},
		{"local backend of its own", "terraform {\n  backend \"local\" {\n    path = \"s.tfstate\"\n  }\n}", true},
		{"resource block called encryption", "resource \"google_storage_bucket\" \"b\" {\n  encryption {\n    default_kms_key_name = \"k\"\n  }\n}", true},
		{"encryption of its own", "terraform {\n  encryption {\n    method \"unencrypted\" \"u\" {}\n  }\n}", false},
		{"remote backend", "terraform {\n  backend \"s3\" {\n    bucket = \"b\"\n  }\n}", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := encryptedFixture(t, bin, map[string]string{"mod/main.tf": tc.main})
			f.plan(nil, runner.PlanOptions{})
			env := readFile(t, filepath.Join(logs, "env-plan.log"))
			if got := strings.Contains(env, "TF_ENCRYPTION="); got != tc.knit {
				t.Errorf("knit set TF_ENCRYPTION: %v, want %v", got, tc.knit)
			}
		})
	}
}
