package terraform_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"knit.dev/knit/internal/runner"
	"knit.dev/knit/internal/runner/terraform"
	"knit.dev/knit/internal/testtools"
)

// echoModule takes untyped variables (type = any), so a value arrives with
// the JSON type knit wrote: a number as a number, not a string.
var echoModule = map[string]string{
	"mod/main.tf": `
variable "n" { type = any }
variable "l" { type = any }
variable "m" { type = any }

resource "terraform_data" "echo" {
  input = { n = var.n, l = var.l, m = var.m }
}

output "n"   { value = var.n }
output "l"   { value = var.l }
output "m"   { value = var.m }
output "sum" { value = var.n + var.m.k }
output "secret" {
  value     = "hunter2"
  sensitive = true
}
`,
	"mod/scripts/run.sh": "#!/bin/sh\necho hi\n",
}

var echoInputs = runner.Inputs{"n": 3, "l": []any{"a", "b"}, "m": map[string]any{"k": 1}}

func TestPlanApplyOutputsTyped(t *testing.T) {
	t.Parallel()
	f := newFixture(t, testtools.Tofu(t), echoModule, localModule("mod"))
	if err := os.Chmod(f.envDir+"/mod/scripts/run.sh", 0o755); err != nil {
		t.Fatal(err)
	}

	p := f.plan(echoInputs, runner.PlanOptions{})
	if p.Add != 1 || p.Change != 0 || p.Destroy != 0 || addresses(p) != "terraform_data.echo:create" {
		t.Errorf("plan = %+v, want one create of terraform_data.echo", p)
	}
	if want := []string{"l", "m", "n", "secret", "sum"}; !reflect.DeepEqual(p.OutputChanges, want) {
		t.Errorf("OutputChanges = %v, want %v", p.OutputChanges, want)
	}
	if !strings.HasPrefix(p.File, f.c.WorkDir) || len(p.Checksum) != 64 {
		t.Errorf("File %q / Checksum %q: want a saved plan in the work dir", p.File, p.Checksum)
	}

	out := f.apply(p)
	want := runner.Outputs{
		"n":      {Value: float64(3)},
		"l":      {Value: []any{"a", "b"}},
		"m":      {Value: map[string]any{"k": float64(1)}},
		"sum":    {Value: float64(4)},
		"secret": {Value: "hunter2", Sensitive: true},
	}
	if !reflect.DeepEqual(out, want) {
		t.Errorf("Apply outputs = %#v\nwant %#v", out, want)
	}
	read, err := f.r.Outputs(context.Background(), f.c)
	if err != nil || !reflect.DeepEqual(read, want) {
		t.Errorf("Outputs = %#v, %v; want %#v", read, err, want)
	}
	if strings.Contains(f.log.String(), "hunter2") {
		t.Error("a sensitive value reached the log")
	}
	if st, err := os.Stat(f.moduleFile("scripts/run.sh")); err != nil || st.Mode().Perm()&0o100 == 0 {
		t.Errorf("scripts/run.sh lost its exec bit: %v", err)
	}
}

func TestUnchangedPlanSkipsInit(t *testing.T) {
	t.Parallel()
	f := newFixture(t, testtools.Tofu(t), echoModule, localModule("mod"))
	f.planApply(echoInputs)
	if f.inits() != 1 {
		t.Fatalf("inits = %d after the first plan, want 1", f.inits())
	}

	// Nothing changed: no changes, and init does not run again.
	mark := len(f.log.String())
	if p := f.plan(echoInputs, runner.PlanOptions{}); p.HasChanges() {
		t.Errorf("second plan has changes: %+v", p)
	}
	if f.inits() != 1 || strings.Contains(f.log.String()[mark:], "Initializing") {
		t.Errorf("init ran again for an unchanged module (inits = %d)", f.inits())
	}

	// A new input value changes the resource, still without init.
	in := runner.Inputs{"n": 4, "l": []any{"a", "b"}, "m": map[string]any{"k": 1}}
	p := f.plan(in, runner.PlanOptions{Attributes: true})
	if p.Change != 1 || len(p.Resources) != 1 || !reflect.DeepEqual(p.Resources[0].Attributes, []string{"input", "output"}) {
		t.Errorf("plan after input change = %+v, want one update of input/output", p)
	}
	if f.inits() != 1 {
		t.Errorf("a new input re-ran init")
	}

	// A new module file that adds only an output needs no init; one that
	// requires a provider does. Removing a file from the source removes it
	// from the copy, while .terraform stays.
	f.writeSource(map[string]string{"mod/extra.tf": `output "extra" { value = "x" }`})
	f.plan(echoInputs, runner.PlanOptions{})
	if f.inits() != 1 || !fileExists(f.moduleFile("extra.tf")) {
		t.Errorf("after adding extra.tf: inits = %d, copied = %v; want 1, true", f.inits(), fileExists(f.moduleFile("extra.tf")))
	}
	f.writeSource(map[string]string{"mod/versions.tf": `
terraform {
  required_providers {
    local = { source = "hashicorp/local", version = "1.4.0" }
  }
}`})
	f.plan(echoInputs, runner.PlanOptions{})
	if f.inits() != 2 {
		t.Errorf("after requiring a provider: inits = %d, want 2", f.inits())
	}
	if err := os.Remove(f.envDir + "/mod/extra.tf"); err != nil {
		t.Fatal(err)
	}
	f.plan(echoInputs, runner.PlanOptions{})
	if fileExists(f.moduleFile("extra.tf")) {
		t.Error("extra.tf is still in the module copy after leaving the source")
	}
	if !fileExists(f.moduleFile(".terraform")) {
		t.Error(".terraform was removed from the module copy")
	}
}

func TestApplyRefusesChangedPlan(t *testing.T) {
	t.Parallel()
	f := newFixture(t, testtools.Tofu(t), echoModule, localModule("mod"))
	p := f.plan(echoInputs, runner.PlanOptions{})
	data, err := os.ReadFile(p.File)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p.File, append(data, 0), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := f.r.Apply(context.Background(), f.c, p); !errors.Is(err, terraform.ErrPlanChanged) {
		t.Fatalf("Apply of a tampered plan: err = %v, want ErrPlanChanged", err)
	}
	if fileExists(f.c.WorkDir + "/terraform.tfstate") {
		t.Error("the tampered plan changed state")
	}
}

// TestPlanApplyInOneProcess: an ungated apply plans and applies in one tool
// run and still reports what changed; sensitive outputs come from
// output -json, since the stream redacts them.
func TestPlanApplyInOneProcess(t *testing.T) {
	t.Parallel()
	f := newFixture(t, testtools.Tofu(t), echoModule, localModule("mod"))
	if err := os.Chmod(f.envDir+"/mod/scripts/run.sh", 0o755); err != nil {
		t.Fatal(err)
	}
	p, out, err := f.r.PlanApply(context.Background(), f.c, echoInputs)
	if err != nil {
		t.Fatalf("PlanApply: %v\nlog:\n%s", err, f.log)
	}
	if p.Add != 1 || addresses(p) != "terraform_data.echo:create" || p.File != "" {
		t.Errorf("plan = %+v, want one create and no saved plan", p)
	}
	if want := []string{"l", "m", "n", "secret", "sum"}; !reflect.DeepEqual(p.OutputChanges, want) {
		t.Errorf("OutputChanges = %v, want %v (from the plan part of the stream)", p.OutputChanges, want)
	}
	if out["secret"].Value != "hunter2" || !out["secret"].Sensitive || out["sum"].Value != float64(4) {
		t.Errorf("outputs = %v", out)
	}
	if strings.Contains(f.log.String(), "hunter2") {
		t.Error("a sensitive value reached the log")
	}
	again, _, err := f.r.PlanApply(context.Background(), f.c, echoInputs)
	if err != nil || again.HasChanges() {
		t.Errorf("second PlanApply = %+v, %v; want no changes", again, err)
	}
}

// TestAnUnsavedPlanSavesNothingUnlessItsDetailNeedsIt: a drift check that
// only reports plans without -out, in one process, and leaves the saved
// plan a person may be about to approve as it is; a component with an
// update planned again, saving it, for its attribute names.
func TestAnUnsavedPlanSavesNothingUnlessItsDetailNeedsIt(t *testing.T) {
	t.Parallel()
	f := newFixture(t, testtools.Tofu(t), echoModule, localModule("mod"))
	f.planApply(echoInputs)
	changed := runner.Inputs{"n": 4, "l": []any{"a", "b"}, "m": map[string]any{"k": 1}}
	waiting := f.plan(changed, runner.PlanOptions{}) // as if awaiting approval
	saved, err := os.ReadFile(waiting.File)
	if err != nil {
		t.Fatal(err)
	}

	before := terraform.CommandCount(f.r)
	p := f.plan(echoInputs, runner.PlanOptions{Attributes: true, Unsaved: true})
	if p.HasChanges() || p.File != "" || p.Checksum != "" {
		t.Errorf("unsaved in-sync plan %+v", p)
	}
	if n := terraform.CommandCount(f.r) - before; n != 1 {
		t.Errorf("an unsaved in-sync plan ran %d tool processes, want 1", n)
	}
	if now, _ := os.ReadFile(waiting.File); !bytes.Equal(now, saved) {
		t.Error("an unsaved plan replaced the saved plan awaiting approval")
	}

	before = terraform.CommandCount(f.r)
	p = f.plan(changed, runner.PlanOptions{Attributes: true, Unsaved: true})
	if p.Change != 1 || !reflect.DeepEqual(p.Resources[0].Attributes, []string{"input", "output"}) || p.File == "" {
		t.Errorf("unsaved plan of an update %+v: want its attributes, from a saved plan", p)
	}
	if n := terraform.CommandCount(f.r) - before; n != 3 {
		t.Errorf("an unsaved plan of an update ran %d tool processes, want 3 (plan, plan -out, show)", n)
	}
}

// TestOpenTofuUnderAnotherNameIsStillOpenTofu: tofu installed as
// "terraform" (a symlink many teams keep) is still known for OpenTofu, so
// its state is still encrypted; its JSON version output alone could not
// tell.
func TestOpenTofuUnderAnotherNameIsStillOpenTofu(t *testing.T) {
	t.Parallel()
	tofu := testtools.Tofu(t)
	link := filepath.Join(t.TempDir(), "terraform")
	if err := os.Symlink(tofu.Path, link); err != nil {
		t.Fatal(err)
	}
	renamed := tofu
	renamed.Path = link
	v, err := renamed.Version(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(v, "OpenTofu v1.") {
		t.Errorf("tofu as %s says %q, want OpenTofu v1.…", link, v)
	}
}

// TestApplyOfAStalePlanIsRefusedAsStale: a saved plan kept aside (as an
// approval keeps it) is refused by the tool once the run folder holds other
// variables, or once the state moved; the error wraps runner.ErrStalePlan
// and nothing changed.
func TestApplyOfAStalePlanIsRefusedAsStale(t *testing.T) {
	t.Parallel()
	f := newFixture(t, testtools.Tofu(t), echoModule, localModule("mod"))
	keep := func(p *runner.Plan) *runner.Plan {
		t.Helper()
		data, err := os.ReadFile(p.File)
		if err != nil {
			t.Fatal(err)
		}
		kept := *p
		kept.File = filepath.Join(t.TempDir(), "kept.tfplan")
		if err := os.WriteFile(kept.File, data, 0o600); err != nil {
			t.Fatal(err)
		}
		return &kept
	}
	other := runner.Inputs{"n": 4, "l": []any{"a"}, "m": map[string]any{"k": 2}}

	// Another plan lays out other variables.
	kept := keep(f.plan(echoInputs, runner.PlanOptions{}))
	f.plan(other, runner.PlanOptions{})
	if _, err := f.r.Apply(context.Background(), f.c, kept); !errors.Is(err, runner.ErrStalePlan) {
		t.Fatalf("Apply with other variables laid out: err = %v, want ErrStalePlan", err)
	}
	if fileExists(f.c.WorkDir + "/terraform.tfstate") {
		t.Error("the refused plan changed state")
	}

	// Another apply moves the state.
	kept = keep(f.plan(other, runner.PlanOptions{}))
	f.apply(f.plan(other, runner.PlanOptions{}))
	if _, err := f.r.Apply(context.Background(), f.c, kept); !errors.Is(err, runner.ErrStalePlan) {
		t.Fatalf("Apply after the state moved: err = %v, want ErrStalePlan", err)
	}
}
