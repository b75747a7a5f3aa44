package terraform_test

import (
	"context"
	"strings"
	"testing"

	"knit.dev/knit/internal/runner"
	"knit.dev/knit/internal/testtools"
)

// TestAFailedPlanLeadsWithTheToolsFirstError: the error of a plan that
// OpenTofu refuses starts with its first error diagnostic (summary, the
// first sentence of its detail, where), not the exit status, which follows.
func TestAFailedPlanLeadsWithTheToolsFirstError(t *testing.T) {
	t.Parallel()
	tofu := testtools.Tofu(t)
	f := newFixture(t, tofu, map[string]string{"mod/main.tf": `
variable "storage_gb" { type = number }
variable "name" { type = string }
resource "terraform_data" "disk" { input = var.storage_gb }
`}, localModule("mod"))
	_, err := f.r.Plan(context.Background(), f.c, runner.Inputs{"name": "db"}, runner.PlanOptions{})
	if err == nil {
		t.Fatal("a plan without a required variable succeeded")
	}
	first, rest, _ := strings.Cut(err.Error(), "\n")
	want := `plan app: No value for required variable: The root module input variable "storage_gb" is not set, and has no default value. (main.tf line 2)`
	if first != want || !strings.Contains(rest, "exit status 1") {
		t.Errorf("error:\n%s\nwant the first line\n%s\nthen the exit status", err, want)
	}
}
