package cli

import (
	"bytes"
	"strings"
	"testing"

	"knit.dev/knit/internal/view"
)

// TestPipelineStatusSaysEachStagesGates: the text names each stage's soak,
// approvals and windows, as the dashboard's cards do; "-" for none.
func TestPipelineStatusSaysEachStagesGates(t *testing.T) {
	var out bytes.Buffer
	printPipeline(&out, view.Pipeline{Name: "web", Team: "shop", Stages: []view.Stage{
		{Name: "dev", Env: "shop/dev"},
		{Name: "prod", Env: "shop/prod", Soak: "1h", Approvals: 2, RequireOtherApprover: true,
			Windows: []string{`open "0 9 * * 1-5" for 8h UTC`}},
	}})
	lines := strings.Split(out.String(), "\n")
	if !strings.Contains(lines[1], "GATES") {
		t.Fatalf("no GATES column:\n%s", out.String())
	}
	col := strings.Index(lines[1], "GATES")
	want := map[string]string{"dev": "-", "prod": `soak 1h · 2 approvals by another than the author · open "0 9 * * 1-5" for 8h UTC`}
	for _, l := range lines[2:4] {
		name := strings.Fields(l)[0]
		if got := []rune(l); !strings.HasPrefix(string(got[len([]rune(lines[1][:col])):]), want[name]) {
			t.Errorf("stage %s: gates column %q, want %q", name, string(got[len([]rune(lines[1][:col])):]), want[name])
		}
	}
}

// TestReleasesTellARollbackFromTheRunThatFailed (issue 37): the failed
// state a rollout's rollback records names the rollback run; knit
// releases must not print that run as the one that failed verification.
func TestReleasesTellARollbackFromTheRunThatFailed(t *testing.T) {
	var out bytes.Buffer
	printReleases(&out, []view.Release{{ID: "r-2", Params: []byte(`{"version":"2"}`), Commit: "c0ffee", Author: "alice", History: []view.ReleaseEvent{
		{Stage: "staging", State: "applying", RunID: "run-apply"},
		{Stage: "staging", State: "failed", Reason: "VerificationFailed", RunID: "run-apply", Message: "verification Failed"},
		{Stage: "staging", State: "failed", Reason: "VerificationFailed", RunID: "run-back",
			Message: view.RolledBackMessage("staging", "run-back", "run-apply", "verification Failed")},
	}}})
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 4 {
		t.Fatalf("knit releases:\n%s", out.String())
	}
	if !strings.Contains(lines[2], "run run-apply VerificationFailed") {
		t.Errorf("the failed apply's line: %q", lines[2])
	}
	if strings.Contains(lines[3], "run run-back VerificationFailed") ||
		!strings.Contains(lines[3], "VerificationFailed: staging rolls back (run run-back) after run run-apply failed") {
		t.Errorf("the rollback's line reads as the run that failed: %q", lines[3])
	}
}
