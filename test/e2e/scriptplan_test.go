package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// scriptsEnv is an environment of script components (given as YAML list
// items) that record in files/ whether they exist.
func scriptsEnv(name string, components ...string) string {
	return fmt.Sprintf(`apiVersion: knit.dev/v1
kind: Environment
metadata: {name: %[1]s}
spec:
  teamName: qa
  envName: %[1]s
  autoApprove: true
  components:
%[2]s`, name, strings.Join(components, ""))
}

// TestAScriptWhosePlanSaysNoChangesIsAppliedFirst: a script's plan
// command cannot know what its first apply would output; "exit 0" before
// the first apply must not leave it unapplied and its consumer without
// its output.
func TestAScriptWhosePlanSaysNoChangesIsAppliedFirst(t *testing.T) {
	t.Parallel()
	w := newScriptWorld(t)
	w.write(map[string]string{"env.yaml": scriptsEnv("splan",
		`    - name: naming
      type: script
      script: {plan: "exit 0", apply: "echo '{\"name\": \"web-7f3\"}'"}
      outputs: [{name: name}]
    - name: config
      type: script
      script: {apply: "printf '{\"got\": \"%s\"}' \"$KNIT_VAR_NAME\""}
      variables: [{name: name, valueFrom: naming.name}]
      outputs: [{name: got}]
`)})
	r := w.ok("apply", "-f", "env.yaml", "-o", "json")
	if got := componentStatuses(t, r.stdout); got["naming"] != "applied" || got["config"] != "applied" {
		t.Fatalf("statuses %v\n%s", got, r.stdout)
	}
	if v := strings.TrimSpace(w.ok("output", "qa/splan", "config", "got").stdout); v != "web-7f3" {
		t.Errorf("config got %q from naming, want web-7f3", v)
	}
	// Once applied, its plan command decides: no changes.
	if r := w.knit("plan", "-f", "env.yaml", "--detailed-exitcode"); r.code != 0 {
		t.Errorf("plan after the apply: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
}

// TestTeardownAfterAMiddleComponentFailedDestroysEveryLiveComponent: the
// middle component failed before its tool ran (its input is missing): it
// has nothing to destroy, and must not keep teardown from destroying what
// it depends on.
func TestTeardownAfterAMiddleComponentFailedDestroysEveryLiveComponent(t *testing.T) {
	t.Parallel()
	w := newScriptWorld(t)
	files := w.path("files")
	if err := os.MkdirAll(files, 0o755); err != nil {
		t.Fatal(err)
	}
	// Each script marks that it exists in files/NAME while it does.
	script := func(name, extra string) string {
		return fmt.Sprintf(`    - name: %[1]s
      type: script
      script: {apply: "touch %[2]s/%[1]s && echo '{}'", destroy: "rm %[2]s/%[1]s"}
%[3]s`, name, files, extra)
	}
	w.write(map[string]string{"env.yaml": scriptsEnv("smiddle",
		// base declares an output its apply does not print.
		script("base", "      outputs: [{name: id}]\n"),
		script("middle", "      variables: [{name: id, valueFrom: base.id}]\n"),
		script("last", "      dependsOn: [middle]\n"),
		script("side", "      dependsOn: [base]\n"),
	)})
	r := w.knit("apply", "-f", "env.yaml", "-o", "json")
	got := componentStatuses(t, r.stdout)
	if r.code != 1 || fmt.Sprint(got) != "map[base:applied last:skipped middle:failed side:applied]" {
		t.Fatalf("apply: exit %d, statuses %v\n%s%s", r.code, got, r.stdout, r.stderr)
	}
	r = w.knit("teardown", "qa/smiddle", "--auto-approve", "-o", "json")
	if r.code != 0 {
		t.Fatalf("teardown: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if got := componentStatuses(t, r.stdout); got["base"] != "destroyed" || got["side"] != "destroyed" {
		t.Errorf("teardown statuses %v", got)
	}
	left, _ := filepath.Glob(filepath.Join(files, "*"))
	if len(left) > 0 {
		t.Errorf("live after teardown: %v", left)
	}
}
