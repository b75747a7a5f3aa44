package cli

import (
	"bytes"
	"strings"
	"testing"

	"knit.dev/knit/internal/engine"
	"knit.dev/knit/internal/runner"
)

// A plan lists each changed value old → new under its resource, and the
// notes where the apply may do more; a plan of an environment never applied
// does not claim revision 0.
func TestPrintResultShowsValueChangesAndNotes(t *testing.T) {
	plan := &runner.Plan{Change: 1, Resources: []runner.ResourceChange{{
		Address: "Deployment/web/podinfo", Action: runner.ActionUpdate,
		Attributes: []string{"spec.replicas"},
		Changes:    []runner.ValueChange{{Path: "spec.replicas", Old: "1", New: "3"}},
	}}, Notes: []string{"pre-upgrade hook Job/web/migrate runs at apply"}}
	var out bytes.Buffer
	printResult(&out, &engine.Result{RunID: "r1", Env: "t/e", Kind: "plan", Status: "planned",
		Components: []*engine.ComponentResult{{Name: "podinfo", Status: engine.Planned, Plan: plan}}})
	for _, want := range []string{"spec.replicas: 1 → 3", "!   pre-upgrade hook Job/web/migrate runs at apply", "plan t/e (run r1): planned"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
	if strings.Contains(out.String(), "revision 0") {
		t.Errorf("output says revision 0:\n%s", out.String())
	}
}

// TestAFailedComponentsWholeReasonIsShown (issue 38 item 7): a reason of
// several lines (a chart's values schema error names the field on its
// second line) is shown whole below the component, indented, bounded;
// a component that did not fail keeps one line.
func TestAFailedComponentsWholeReasonIsShown(t *testing.T) {
	long := "values don't meet the specifications of the schema(s) in the following chart(s):\nweb:\n- (root): Additional property enabld is not allowed\n"
	var b strings.Builder
	for i := range 30 {
		b.WriteString("line " + string(rune('a'+i%26)) + "\n")
	}
	var out bytes.Buffer
	printResult(&out, &engine.Result{RunID: "r1", Env: "t/e", Kind: "apply", Status: "failed",
		Components: []*engine.ComponentResult{
			{Name: "web", Status: engine.Failed, Reason: long},
			{Name: "flood", Status: engine.Failed, Reason: "first\n" + b.String()},
			{Name: "db", Status: engine.Skipped, Reason: "skipped: upstream web failed"},
			{Name: "ok", Status: engine.Applied, Reason: "two\nlines"}}})
	got := out.String()
	for _, want := range []string{
		"web        failed", "values don't meet the specifications of the schema(s) in the following chart(s):\n",
		"\n             web:\n", "\n             - (root): Additional property enabld is not allowed\n",
		"… 10 more lines (-o json has them all)", "upstream web failed",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("output lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "    lines") {
		t.Errorf("a component that did not fail shows more than its first line:\n%s", got)
	}
}
