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
