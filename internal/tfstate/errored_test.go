package tfstate_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"knit.dev/knit/internal/runner"
)

// countedModule's resource appends a line to DIR/created each time it is
// created.
var countedModule = map[string]string{
	"mod/main.tf": `
variable "password" {
  type      = string
  sensitive = true
}
variable "n" { type = number }
variable "dir" { type = string }
resource "terraform_data" "db" {
  input = { password = var.password, n = var.n }
  provisioner "local-exec" {
    command = "echo created >> ${var.dir}/created"
  }
}
output "n" { value = terraform_data.db.output.n }
`,
}

// TestAnErroredStateIsPushedBeforeAnythingElseRuns: the store refuses
// every state write for longer than the retries last, so the apply fails
// and the tool leaves errored.tfstate in the work dir, holding the
// resource it created. Once the store is back, the component's next
// command first pushes that state into the store (fenced as any write):
// the plan finds the resource, and nothing is created twice.
func TestAnErroredStateIsPushedBeforeAnythingElseRuns(t *testing.T) {
	f := &flaky{Store: openSQLite(t)}
	env := environment(t, countedModule)
	a := newReplica(t, f, env)
	a.srv.Lease = 2 * time.Second
	dir := t.TempDir()
	in := runner.Inputs{"password": secret, "n": 1, "dir": dir}
	ctx := context.Background()

	f.n.Store(1 << 20)
	if _, _, err := a.r.PlanApply(ctx, a.c, in); err == nil {
		t.Fatalf("the apply succeeded while the store refused every write\n%s", a.log)
	}
	errored := filepath.Join(a.c.WorkDir, "module", "errored.tfstate")
	if _, err := os.Stat(errored); err != nil {
		t.Fatalf("the tool left no %s: %v\n%s", errored, err, a.log)
	}
	f.n.Store(0)
	p, err := a.r.Plan(ctx, a.c, in, runner.PlanOptions{})
	if err != nil || p.HasChanges() {
		t.Fatalf("the plan once the store is back: %+v, %v; want no changes (the errored state pushed)\n%s", p, err, a.log)
	}
	if _, err := os.Stat(errored + ".pushed"); err != nil {
		t.Errorf("the pushed state is not kept as %s.pushed: %v", errored, err)
	}
	if data, _ := os.ReadFile(filepath.Join(dir, "created")); strings.Count(string(data), "created") != 1 {
		t.Errorf("the resource was created %d times, want once", strings.Count(string(data), "created"))
	}
	if !strings.Contains(a.log.String(), "moved the state the tool could not write") {
		t.Errorf("the log does not say the errored state was moved:\n%s", a.log)
	}
}
