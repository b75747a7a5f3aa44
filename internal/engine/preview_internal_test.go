package engine

import (
	"os"
	"path/filepath"
	"testing"

	"knit.dev/knit/internal/runner"
)

// A plan's digest depends on what the plan does and on the component's
// inputs (its fingerprint), never on where the plan file is or when it
// was made; the run's checksum is over its changing components.
func TestPlanDigestIsTheSameForTheSamePlan(t *testing.T) {
	plan := func(file string, add, change int, res ...runner.ResourceChange) *runner.Plan {
		return &runner.Plan{Add: add, Change: change, Resources: res, File: file, Checksum: file + "-sum"}
	}
	upd := runner.ResourceChange{Address: "terraform_data.this", Action: runner.ActionUpdate}
	read := runner.ResourceChange{Address: "data.x.y", Action: runner.ActionRead}
	a := PlanDigest("fp1", plan("/preview/1/app/plan.tfplan", 0, 1, upd, read))
	if b := PlanDigest("fp1", plan("", 0, 1, upd)); a != b || a == "" {
		t.Errorf("the same plan from another place, or without its data reads: %s != %s", a, b)
	}
	for what, other := range map[string]string{
		"other inputs":      PlanDigest("fp2", plan("", 0, 1, upd)),
		"other counts":      PlanDigest("fp1", plan("", 1, 1, upd)),
		"another resource":  PlanDigest("fp1", plan("", 0, 1, runner.ResourceChange{Address: "terraform_data.that", Action: runner.ActionUpdate})),
		"a destroy of it":   PlanDigest("fp1", &runner.Plan{Change: 1, Resources: []runner.ResourceChange{upd}, Destroying: true}),
		"a replace instead": PlanDigest("fp1", plan("", 0, 1, runner.ResourceChange{Address: "terraform_data.this", Action: runner.ActionReplace})),
	} {
		if other == a {
			t.Errorf("%s has the same digest", what)
		}
	}
	if d := PlanDigest("fp1", plan("", 0, 0)); d != "" {
		t.Errorf("a plan without changes has digest %q", d)
	}
	sum := PlanChecksum([]*ComponentResult{{Name: "b", Digest: "2"}, {Name: "a", Digest: "1"}, {Name: "c"}})
	if sum == "" || sum != PlanChecksum([]*ComponentResult{{Name: "a", Digest: "1"}, {Name: "b", Digest: "2"}}) {
		t.Errorf("the checksum depends on the components' order or on unchanged ones: %s", sum)
	}
	if PlanChecksum([]*ComponentResult{{Name: "a"}}) != "" {
		t.Error("a run without changes has a checksum")
	}
}

// A preview's copy of a work dir leaves behind what names the real one
// (the saved plan, init's stamp, the initialised backend) and keeps links.
func TestCopyWorkDirLeavesTheSavedPlanBehind(t *testing.T) {
	src, dst := t.TempDir(), filepath.Join(t.TempDir(), "copy")
	for name, body := range map[string]string{"plan.tfplan": "plan", "init.stamp": "s", "terraform.tfstate": "state",
		"module/main.tf": "tf", "module/.terraform/terraform.tfstate": "backend", "module/run.sh": "#!/bin/sh\n"} {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(src, name)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(src, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.Chmod(filepath.Join(src, "module/run.sh"), 0o755))
	must(os.Symlink("/plugin-cache/provider", filepath.Join(src, "module/.terraform/provider")))
	must(copyWorkDir(src, dst))
	for _, gone := range []string{"plan.tfplan", "init.stamp", "module/.terraform/terraform.tfstate"} {
		if _, err := os.Lstat(filepath.Join(dst, gone)); err == nil {
			t.Errorf("%s was copied", gone)
		}
	}
	if b, err := os.ReadFile(filepath.Join(dst, "terraform.tfstate")); err != nil || string(b) != "state" {
		t.Errorf("the state was not copied: %q, %v", b, err)
	}
	if st, err := os.Stat(filepath.Join(dst, "module/run.sh")); err != nil || st.Mode().Perm()&0o100 == 0 {
		t.Errorf("an executable lost its mode: %v, %v", st, err)
	}
	if target, err := os.Readlink(filepath.Join(dst, "module/.terraform/provider")); err != nil || target != "/plugin-cache/provider" {
		t.Errorf("the link was not kept: %q, %v", target, err)
	}
	must(copyWorkDir(filepath.Join(src, "missing"), filepath.Join(t.TempDir(), "new")))
}
