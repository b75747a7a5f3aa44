package terraform_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"knit.dev/knit/internal/runner"
	"knit.dev/knit/internal/testtools"
)

// markerModule leaves a marker file when its resource is destroyed, through
// a destroy-time local-exec provisioner.
var markerModule = map[string]string{
	"mod/main.tf": `
variable "marker" { type = string }
resource "terraform_data" "d" {
  input = var.marker
  provisioner "local-exec" {
    when    = destroy
    command = "echo destroyed > ${self.input}"
  }
}
output "marker" { value = var.marker }
`,
}

func TestDestroyRunsDestroyProvisioners(t *testing.T) {
	t.Parallel()
	f := newFixture(t, testtools.Tofu(t), markerModule, localModule("mod"))
	marker := filepath.Join(t.TempDir(), "marker")
	in := runner.Inputs{"marker": marker}
	f.planApply(in)
	if fileExists(marker) {
		t.Fatal("marker exists before destroy")
	}
	if err := f.r.Destroy(context.Background(), f.c, in); err != nil {
		t.Fatalf("Destroy: %v\n%s", err, f.log)
	}
	if got := readFile(t, marker); strings.TrimSpace(got) != "destroyed" {
		t.Errorf("marker = %q, want the destroy provisioner's output", got)
	}
	out, err := f.r.Outputs(context.Background(), f.c)
	if err != nil || len(out) != 0 {
		t.Errorf("Outputs after destroy = %v, %v; want none", out, err)
	}
	// A second destroy finds nothing to do and runs nothing.
	inits := f.inits()
	if err := f.r.Destroy(context.Background(), f.c, in); err != nil {
		t.Fatalf("second Destroy: %v", err)
	}
	if f.inits() != inits || !strings.Contains(f.log.String(), "nothing to destroy") {
		t.Error("second Destroy ran the tool")
	}
}

func TestDestroyAfterSourceRemoved(t *testing.T) {
	t.Parallel()
	f := newFixture(t, testtools.Tofu(t), markerModule, localModule("mod"))
	marker := filepath.Join(t.TempDir(), "marker")
	in := runner.Inputs{"marker": marker}
	f.planApply(in)
	if err := os.RemoveAll(filepath.Join(f.envDir, "mod")); err != nil {
		t.Fatal(err)
	}
	if _, err := f.r.Plan(context.Background(), f.c, in, runner.PlanOptions{}); err == nil {
		t.Error("Plan without a module source succeeded")
	}
	if err := f.r.Destroy(context.Background(), f.c, in); err != nil {
		t.Fatalf("Destroy: %v\n%s", err, f.log)
	}
	if !fileExists(marker) || !strings.Contains(f.log.String(), "copy from its last run") {
		t.Error("Destroy did not fall back to the last module copy")
	}
}

func TestDestroyPlanApplied(t *testing.T) {
	t.Parallel()
	f := newFixture(t, testtools.Tofu(t), markerModule, localModule("mod"))
	marker := filepath.Join(t.TempDir(), "marker")
	in := runner.Inputs{"marker": marker}
	f.planApply(in)
	p := f.plan(in, runner.PlanOptions{Destroy: true})
	if !p.Destroying || p.Destroy != 1 || addresses(p) != "terraform_data.d:delete" {
		t.Errorf("destroy plan = %+v, want one delete", p)
	}
	out := f.apply(p)
	if len(out) != 0 || !fileExists(marker) {
		t.Errorf("after applying the destroy plan: outputs %v, marker %v; want none, true", out, fileExists(marker))
	}
}

func TestDestroyNeverAppliedIsNoop(t *testing.T) {
	t.Parallel()
	f := newFixture(t, testtools.Tofu(t), markerModule, localModule("mod"))
	if err := f.r.Destroy(context.Background(), f.c, runner.Inputs{"marker": "x"}); err != nil {
		t.Fatalf("Destroy: %v", err)
	}
	if f.inits() != 0 || fileExists(f.moduleFile(".")) {
		t.Error("Destroy of a never-applied component prepared or ran the tool")
	}
	if out, err := f.r.Outputs(context.Background(), f.c); err != nil || len(out) != 0 {
		t.Errorf("Outputs of a never-applied component = %v, %v", out, err)
	}
}

// slowModule's resource takes 30 s to create, long enough to interrupt.
var slowModule = map[string]string{
	"mod/main.tf": `
resource "terraform_data" "slow" {
  provisioner "local-exec" { command = "sleep 30" }
}
`,
}

func TestCancelInterruptsTool(t *testing.T) {
	t.Parallel()
	f := newFixture(t, testtools.Tofu(t), slowModule, localModule("mod"))
	p := f.plan(nil, runner.PlanOptions{})

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() {
		_, err := f.r.Apply(ctx, f.c, p)
		done <- err
	}()
	deadline := time.Now().Add(60 * time.Second) // a hang guard
	for !strings.Contains(f.log.String(), "Provisioning with 'local-exec'") {
		if time.Now().After(deadline) {
			t.Fatalf("the provisioner never started:\n%s", f.log)
		}
		time.Sleep(20 * time.Millisecond)
	}
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("Apply after cancel: err = %v, want context.Canceled", err)
		}
	case <-time.After(60 * time.Second): // a hang guard: the provisioner alone sleeps 30 s
		t.Fatal("Apply did not return after cancel")
	}
	// Any of these shows the group got SIGINT, not SIGKILL. tofu prints
	// "Interrupt received" from its signal goroutine, which can lose the
	// race with its exit once the provisioner (which got SIGINT too) has
	// failed; "Stopping operation" is the operation noticing the stop; the
	// provisioner's error names the signal it died of.
	log := f.log.String()
	if !strings.Contains(log, "Interrupt received") && !strings.Contains(log, "Stopping operation") && !strings.Contains(log, "signal: interrupt") {
		t.Errorf("the tool was not interrupted gracefully:\n%s", f.log)
	}
	// State is intact and unlocked: the next plan works and still wants the
	// resource (tainted or never created).
	if next := f.plan(nil, runner.PlanOptions{}); next.Add != 1 {
		t.Errorf("plan after an interrupted apply = %+v, want the resource again", next)
	}
}
