package terraform_test

import (
	"context"
	"reflect"
	"testing"

	"knit.dev/knit/internal/runner"
	"knit.dev/knit/internal/testtools"
)

// checkModule has a check block whose assertion holds only when ok is true.
var checkModule = map[string]string{
	"mod/main.tf": `
variable "ok" { type = bool }
resource "terraform_data" "app" { input = var.ok }
check "health" {
  assert {
    condition     = var.ok
    error_message = "the app is not healthy"
  }
}
`,
}

// An apply reports the check blocks whose assertions failed, once each,
// whether it applies a saved plan or plans and applies in one step; one
// whose assertions hold reports none.
func TestApplyReportsFailedCheckBlocks(t *testing.T) {
	t.Parallel()
	f := newFixture(t, testtools.Tofu(t), checkModule, localModule("mod"))
	var got []runner.CheckFailure
	f.c.CheckFailed = func(c runner.CheckFailure) { got = append(got, c) }
	want := []runner.CheckFailure{{Check: "health", Message: "the app is not healthy"}}

	f.planApply(runner.Inputs{"ok": false})
	if !reflect.DeepEqual(got, want) {
		t.Errorf("saved plan: check failures %+v, want %+v\nlog:\n%s", got, want, f.log)
	}
	got = nil
	f.planApply(runner.Inputs{"ok": true})
	if len(got) != 0 {
		t.Errorf("a check that holds was reported: %+v", got)
	}
	if _, _, err := f.r.PlanApply(context.Background(), f.c, runner.Inputs{"ok": false}); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("plan and apply in one step: check failures %+v, want %+v", got, want)
	}
}
