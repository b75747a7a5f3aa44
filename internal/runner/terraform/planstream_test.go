package terraform_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"knit.dev/knit/internal/runner"
	"knit.dev/knit/internal/testtools"
)

// TestStreamPlanMatchesShowPlan: the counts, resources and output changes
// read from the plan stream are those show -json gives, for normal,
// refresh-only and destroy plans, against real tofu and a real provider.
func TestStreamPlanMatchesShowPlan(t *testing.T) {
	t.Parallel()
	f := newFixture(t, testtools.Tofu(t), fileModule, localModule("mod"))
	target := filepath.Join(t.TempDir(), "managed.txt")
	in := runner.Inputs{"path": target}
	same := func(what string, opts runner.PlanOptions) {
		t.Helper()
		detailed := opts
		detailed.Attributes, detailed.KnownOutputs = true, true
		b, d := f.plan(in, opts), f.plan(in, detailed)
		if b.Add != d.Add || b.Change != d.Change || b.Destroy != d.Destroy || addresses(b) != addresses(d) ||
			strings.Join(b.OutputChanges, ",") != strings.Join(d.OutputChanges, ",") {
			t.Errorf("%s: plan from the stream %+v differs from show -json's %+v", what, b, d)
		}
		if !d.HasChanges() {
			t.Errorf("%s: no changes to compare", what)
		}
	}
	same("create", runner.PlanOptions{})
	f.planApply(in)
	if err := os.Remove(target); err != nil {
		t.Fatal(err)
	}
	same("drift, normal plan", runner.PlanOptions{})
	same("drift, refresh-only plan", runner.PlanOptions{RefreshOnly: true})
	same("destroy", runner.PlanOptions{Destroy: true})
}
