package terraform_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"knit.dev/knit/internal/runner"
	"knit.dev/knit/internal/testtools"
)

var idModule = map[string]string{
	"mod/main.tf": `
variable "id" { type = string }
variable "n" { type = number }
resource "terraform_data" "d" { input = "${var.id}/${var.n}" }
output "x" { value = terraform_data.d.output }
`,
}

// A plan with a placeholder shows resources and actions, and leaves
// everything an apply uses as it was: the saved plan awaiting approval is
// the one applied (with its real inputs), no plan file of the placeholder
// is left, and the state holds no placeholder.
func TestAPlaceholderPlanLeavesTheSavedPlanAndStateAlone(t *testing.T) {
	t.Parallel()
	f := newFixture(t, testtools.Tofu(t), idModule, localModule("mod"))
	f.planApply(runner.Inputs{"id": "real", "n": 1})
	waiting := f.plan(runner.Inputs{"id": "real2", "n": 1}, runner.PlanOptions{})
	saved, err := os.ReadFile(waiting.File)
	if err != nil {
		t.Fatal(err)
	}

	p, err := f.r.PlanPlaceholders(context.Background(), f.c, runner.Inputs{"n": 1}, []string{"id"},
		runner.PlanOptions{Attributes: true, KnownOutputs: true})
	if err != nil {
		t.Fatalf("PlanPlaceholders: %v\n%s", err, f.log)
	}
	if p.Change != 1 || addresses(p) != "terraform_data.d:update" || p.File != "" || p.Checksum != "" {
		t.Errorf("placeholder plan %+v: want an update of terraform_data.d, not saved", p)
	}
	if ch := fmt.Sprint(p.Resources[0].Changes); !regexp.MustCompile(regexp.QuoteMeta(runner.PlaceholderText("id")) + `-[0-9a-f]{12}/1`).MatchString(ch) {
		t.Errorf("the plan was not made with the placeholder: %s", ch)
	}
	if left, _ := filepath.Glob(filepath.Join(f.c.WorkDir, "*.tfplan")); len(left) != 1 || left[0] != waiting.File {
		t.Errorf("plan files left in the work dir: %v", left)
	}
	if now, _ := os.ReadFile(waiting.File); !bytes.Equal(now, saved) {
		t.Fatal("the placeholder plan replaced the saved plan awaiting approval")
	}
	out, err := f.r.Outputs(context.Background(), f.c)
	if err != nil || out["x"].Value != "real/1" {
		t.Errorf("outputs after the placeholder plan: %+v, %v", out, err)
	}
	if out := f.apply(waiting); out["x"].Value != "real2/1" {
		t.Errorf("the approved plan applied %+v", out)
	}
}

// Only a variable whose type has a safe placeholder takes one, and none
// is given to a module whose init reads its variables.
func TestAPlaceholderIsRefusedWhereItIsNotSafe(t *testing.T) {
	t.Parallel()
	f := newFixture(t, testtools.Tofu(t), idModule, localModule("mod"))
	_, err := f.r.PlanPlaceholders(context.Background(), f.c, runner.Inputs{"id": "x"}, []string{"n"}, runner.PlanOptions{})
	if !errors.Is(err, runner.ErrUnsupported) || !strings.Contains(err.Error(), "variable n is of type number") {
		t.Errorf("a number: %v", err)
	}
	_, err = f.r.PlanPlaceholders(context.Background(), f.c, runner.Inputs{"n": 1}, []string{"nope"}, runner.PlanOptions{})
	if !errors.Is(err, runner.ErrUnsupported) || !strings.Contains(err.Error(), "declares no variable nope") {
		t.Errorf("an undeclared variable: %v", err)
	}

	b := newFixture(t, testtools.Tofu(t), map[string]string{"mod/main.tf": `
variable "p" { type = string }
terraform {
  backend "local" { path = var.p }
}
`}, localModule("mod"))
	_, err = b.r.PlanPlaceholders(context.Background(), b.c, nil, []string{"p"}, runner.PlanOptions{})
	if !errors.Is(err, runner.ErrUnsupported) || !strings.Contains(err.Error(), "init reads its variables") {
		t.Errorf("a backend of variables: %v", err)
	}
	if _, err := os.Stat(filepath.Join(b.c.WorkDir, "module")); !os.IsNotExist(err) {
		t.Errorf("a refused placeholder plan laid out the module: %v", err)
	}
}
