package terraform_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"knit.dev/knit/internal/runner"
	"knit.dev/knit/internal/runner/terraform"
	"knit.dev/knit/internal/testtools"
)

// TestPrepareAheadInitsOnceForTheTurn: init run ahead of a new component's
// turn, without its inputs, is the init the turn needs: the turn then runs
// one tool process, and its log (the runner's) shows the init once.
func TestPrepareAheadInitsOnceForTheTurn(t *testing.T) {
	t.Parallel()
	f := newFixture(t, testtools.Tofu(t), echoModule, localModule("mod"))
	if err := f.r.PrepareAhead(context.Background(), f.c); err != nil {
		t.Fatalf("PrepareAhead: %v\nlog:\n%s", err, f.log)
	}
	if f.inits() != 1 || terraform.CommandCount(f.r) != 1 {
		t.Fatalf("after PrepareAhead: inits %d, commands %d; want 1, 1", f.inits(), terraform.CommandCount(f.r))
	}
	if got := readFile(t, f.moduleFile("knit.auto.tfvars.json")); got != "{}\n" {
		t.Errorf("inputs file before the turn = %q, want {} (inputs are not known yet)", got)
	}
	p, out, err := f.r.PlanApply(context.Background(), f.c, echoInputs)
	if err != nil {
		t.Fatalf("PlanApply: %v\nlog:\n%s", err, f.log)
	}
	if p.Add != 1 || out["sum"].Value != float64(4) {
		t.Errorf("turn: plan %+v, outputs %v", p, out)
	}
	// The apply, and output -json for the sensitive output.
	if f.inits() != 1 || terraform.CommandCount(f.r) != 3 {
		t.Errorf("after the turn: inits %d, commands %d; want 1 (ahead) and 3", f.inits(), terraform.CommandCount(f.r))
	}

	// Applied and initialised: preparing again writes nothing and runs nothing.
	inputs := f.moduleFile("knit.auto.tfvars.json")
	before := readFile(t, inputs)
	if err := f.r.PrepareAhead(context.Background(), f.c); err != nil {
		t.Fatal(err)
	}
	if f.inits() != 1 || terraform.CommandCount(f.r) != 3 || readFile(t, inputs) != before {
		t.Errorf("PrepareAhead of an initialised component: inits %d, commands %d, inputs file %q (was %q)",
			f.inits(), terraform.CommandCount(f.r), readFile(t, inputs), before)
	}
}

// TestPrepareAheadLeavesInputDependentInitToTheTurn: when init would read
// the inputs (a module source built from a variable), preparing ahead does
// nothing at all; the turn inits with the real inputs.
func TestPrepareAheadLeavesInputDependentInitToTheTurn(t *testing.T) {
	t.Parallel()
	f := newFixture(t, testtools.Tofu(t), map[string]string{
		"mod/main.tf": `
variable "child" { type = string }
module "child" { source = "./${var.child}" }
output "v" { value = module.child.v }
`,
		"mod/kid/main.tf": `output "v" { value = "from kid" }`,
	}, localModule("mod"))
	if err := f.r.PrepareAhead(context.Background(), f.c); err != nil {
		t.Fatalf("PrepareAhead: %v", err)
	}
	if terraform.CommandCount(f.r) != 0 || fileExists(f.moduleFile("main.tf")) {
		t.Fatalf("PrepareAhead ran %d commands or laid out the module; want nothing", terraform.CommandCount(f.r))
	}
	_, out, err := f.r.PlanApply(context.Background(), f.c, runner.Inputs{"child": "kid"})
	if err != nil {
		t.Fatalf("PlanApply: %v\nlog:\n%s", err, f.log)
	}
	if out["v"].Value != "from kid" || f.inits() != 1 {
		t.Errorf("turn: outputs %v, inits %d; want from kid, 1", out, f.inits())
	}
	if _, err := os.Stat(filepath.Join(f.c.WorkDir, "init.stamp")); err != nil {
		t.Errorf("no init stamp after the turn: %v", err)
	}
}
