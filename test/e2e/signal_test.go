package e2e

import (
	"os/exec"
	"strings"
	"syscall"
	"testing"
)

// TestInterruptStopsTheToolRecordsTheRunAndReleasesTheLock sends knit the
// SIGINT a person's Ctrl-C would: the tool is interrupted, the run is
// recorded as interrupted, knit exits 1, and the next apply completes.
func TestInterruptStopsTheToolRecordsTheRunAndReleasesTheLock(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	var stderr strings.Builder
	cmd := w.startSlowApply("sigint", 20, &stderr)
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	err := cmd.Wait()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 1 {
		t.Errorf("knit after SIGINT: %v, want exit 1\n%s", err, stderr.String())
	}
	// The provisioner was cut short, not waited out: it never wrote its end.
	if _, ok := w.eventTimes("end")["slow"]; ok {
		t.Error("the interrupted provisioner ran to its end")
	}
	if !strings.Contains(stderr.String(), "interrupted") {
		t.Errorf("stderr does not say the run was interrupted:\n%s", stderr.String())
	}
	hist := w.ok("history", "qa/sigint", "-o", "json").stdout
	if !strings.Contains(hist, `"status": "interrupted"`) {
		t.Errorf("run not recorded as interrupted:\n%s", hist)
	}
	if _, ok := w.eventTimes("start")["last"]; ok {
		t.Error("a component after the interrupted one started")
	}
	// The lock was released: the next apply goes through and finishes the job.
	r := w.ok("apply", "-f", "env.yaml", "-o", "json")
	if got := componentStatuses(t, r.stdout); got["last"] != "applied" || got["slow"] != "applied" {
		t.Errorf("resume: %v", got)
	}
}
