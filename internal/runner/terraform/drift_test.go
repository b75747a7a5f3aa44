package terraform_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"knit.dev/knit/internal/runner"
	"knit.dev/knit/internal/runner/terraform"
	"knit.dev/knit/internal/testtools"
)

// fileModule manages a real file through hashicorp/local 1.4.0 from the
// offline mirror, so a test can make drift by deleting it.
var fileModule = map[string]string{
	"mod/main.tf": `
terraform {
  required_providers {
    local = { source = "hashicorp/local", version = "1.4.0" }
  }
}
variable "path" { type = string }
resource "local_file" "f" {
  filename = var.path
  content  = "hello"
}
output "path" { value = local_file.f.filename }
`,
}

func TestDriftAndRefreshOnly(t *testing.T) {
	t.Parallel()
	f := newFixture(t, testtools.Tofu(t), fileModule, localModule("mod"))
	target := filepath.Join(t.TempDir(), "managed.txt")
	in := runner.Inputs{"path": target}
	f.planApply(in)
	if readFile(t, target) != "hello" {
		t.Fatal("apply did not write the file")
	}
	if !fileExists(f.moduleFile(".terraform.lock.hcl")) {
		t.Error("the lock file the tool wrote is missing from the module copy")
	}
	if p := f.plan(in, runner.PlanOptions{}); p.HasChanges() {
		t.Fatalf("plan right after apply has changes: %+v", p)
	}

	// Out-of-band deletion: a normal plan recreates the file...
	if err := os.Remove(target); err != nil {
		t.Fatal(err)
	}
	fix := f.plan(in, runner.PlanOptions{})
	if fix.Add != 1 || addresses(fix) != "local_file.f:create" {
		t.Errorf("plan after deleting the file = %+v, want a create of local_file.f", fix)
	}
	// ...and a refresh-only plan reports the drift itself.
	drift := f.plan(in, runner.PlanOptions{RefreshOnly: true})
	if !drift.HasChanges() || addresses(drift) != "local_file.f:delete" {
		t.Errorf("refresh-only plan = %+v, want local_file.f deleted outside knit", drift)
	}
	// The refresh-only plan replaced the saved plan: the older one is refused.
	if _, err := f.r.Apply(context.Background(), f.c, fix); !errors.Is(err, terraform.ErrPlanChanged) {
		t.Errorf("Apply of a replaced plan: err = %v, want ErrPlanChanged", err)
	}
	f.planApply(in)
	if readFile(t, target) != "hello" {
		t.Error("apply did not restore the file")
	}
	if f.inits() != 1 {
		t.Errorf("inits = %d, want 1", f.inits())
	}
}

func TestStateLockHeldElsewhere(t *testing.T) {
	t.Parallel()
	f := newFixture(t, testtools.Tofu(t), echoModule, localModule("mod"))
	f.planApply(echoInputs)

	// Hold the state lock the way another tofu process would: an fcntl
	// write lock on the state file, and the lock info beside it.
	state := filepath.Join(f.c.WorkDir, "terraform.tfstate")
	fh, err := os.OpenFile(state, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	lk := syscall.Flock_t{Type: syscall.F_WRLCK, Whence: 0}
	if err := syscall.FcntlFlock(fh.Fd(), syscall.F_SETLK, &lk); err != nil {
		t.Fatal(err)
	}
	info, _ := json.Marshal(map[string]string{
		"ID": "1234-abcd", "Operation": "OperationTypeApply", "Who": "alice@ci", "Version": "1.12.6",
		"Created": "2026-01-02T03:04:05Z", "Path": state,
	})
	if err := os.WriteFile(filepath.Join(f.c.WorkDir, ".terraform.tfstate.lock.info"), info, 0o644); err != nil {
		t.Fatal(err)
	}

	_, err = f.r.Plan(context.Background(), f.c, echoInputs, runner.PlanOptions{})
	var locked *terraform.StateLockedError
	if !errors.As(err, &locked) {
		t.Fatalf("Plan with the state locked: err = %v, want *StateLockedError", err)
	}
	if locked.Who != "alice@ci" || locked.ID != "1234-abcd" {
		t.Errorf("lock holder = %q / %q, want alice@ci / 1234-abcd (err: %v)", locked.Who, locked.ID, locked.Err)
	}
}

// TestInitRunsWhenTheToolAsks: should the work dir lose what init installed
// while knit's init stamp still matches (a provider deleted under
// .terraform), the tool's request for init is honoured and the plan retried.
func TestInitRunsWhenTheToolAsks(t *testing.T) {
	t.Parallel()
	f := newFixture(t, testtools.Tofu(t), fileModule, localModule("mod"))
	in := runner.Inputs{"path": filepath.Join(t.TempDir(), "managed.txt")}
	f.planApply(in)
	if err := os.RemoveAll(f.moduleFile(".terraform/providers")); err != nil {
		t.Fatal(err)
	}
	if p := f.plan(in, runner.PlanOptions{}); p.HasChanges() {
		t.Errorf("plan after init = %+v, want no changes", p)
	}
	if f.inits() != 2 || !strings.Contains(f.log.String(), "asks for init") {
		t.Errorf("inits = %d, want 2 (one retry)", f.inits())
	}
}
