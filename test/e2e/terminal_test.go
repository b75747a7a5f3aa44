package e2e

import (
	"bytes"
	"errors"
	"os/exec"
	"strings"
	"testing"
)

// TestInteractiveApprovalAtATerminal answers knit's question through a real
// pseudo-terminal (util-linux `script`): "yes" applies the component's plan,
// anything else leaves it awaiting approval (exit 3).
func TestInteractiveApprovalAtATerminal(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	w.write(map[string]string{"env.yaml": `apiVersion: knit.dev/v1
kind: Environment
spec:
  teamName: qa
  envName: tty
  components:
    - name: gated
      type: script
      script: {apply: "echo '{}'"}
`})
	atTerminal := func(answer string) (string, int) { return w.atTerminal("apply -f env.yaml", answer) }
	out, code := atTerminal("no")
	if code != 3 || !strings.Contains(out, "Apply gated? Only 'yes' is accepted") || !strings.Contains(out, "awaiting-approval") {
		t.Errorf("answer no: exit %d\n%s", code, out)
	}
	out, code = atTerminal("yes")
	if code != 0 || !strings.Contains(out, "1 component: 1 applied") {
		t.Errorf("answer yes: exit %d\n%s", code, out)
	}
	// The plan left waiting by "no" was superseded by the one applied.
	if list := w.ok("approvals", "qa/tty").stdout; !strings.Contains(list, "nothing waits") {
		t.Errorf("an old plan still waits for approval:\n%s", list)
	}
}

// TestTeardownPromptListsWhatItDestroys: before asking, a teardown at a
// terminal lists the components it destroys, in the order it destroys
// them, and those destroyProtection keeps; "no" destroys nothing.
func TestTeardownPromptListsWhatItDestroys(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	w.write(map[string]string{"env.yaml": `apiVersion: knit.dev/v1
kind: Environment
spec:
  teamName: qa
  envName: down
  autoApprove: true
  components:
    - name: net
      type: script
      script: {apply: "echo '{}'", destroy: "true"}
    - name: db
      type: script
      dependsOn: [net]
      destroyProtection: true
      script: {apply: "echo '{}'", destroy: "true"}
    - name: app
      type: script
      dependsOn: [db]
      script: {apply: "echo '{}'", destroy: "true"}
    - name: web
      type: script
      dependsOn: [net]
      script: {apply: "echo '{}'", destroy: "true"}
`})
	w.ok("apply", "-f", "env.yaml")
	out, code := w.atTerminal("teardown qa/down", "no")
	if code != 1 {
		t.Fatalf("answer no: exit %d\n%s", code, out)
	}
	text := strings.ReplaceAll(out, "\r", "")
	want := "Teardown of qa/down destroys, in this order:\n  1. app, web\nand keeps (refused):\n" +
		"  db: destroyProtection is set\n  net: db depends on it and is kept\nDestroy these components of qa/down? Only 'yes' is accepted: "
	if !strings.Contains(text, want) || !strings.Contains(text, "teardown of qa/down canceled") {
		t.Errorf("the prompt, want\n%s\ngot\n%s", want, text)
	}
	if st := w.ok("status", "qa/down").stdout; !strings.Contains(st, "qa/down: applied") {
		t.Errorf("answering no changed something:\n%s", st)
	}
}

// atTerminal runs knit ARGS at a pseudo-terminal (util-linux script),
// answering its question, and returns what it printed and its exit code.
func (w *world) atTerminal(args, answer string) (string, int) {
	w.t.Helper()
	if _, err := exec.LookPath("script"); err != nil {
		w.t.Fatal("util-linux `script` is needed to give knit a terminal (Debian: bsdutils, which is essential)")
	}
	cmd := exec.Command("script", "-qec", knitBin+" "+args, "/dev/null")
	cmd.Dir, cmd.Env = w.dir, w.env
	cmd.Stdin = strings.NewReader(answer + "\n")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return out.String(), ee.ExitCode()
	}
	if err != nil {
		w.t.Fatal(err)
	}
	return out.String(), 0
}
