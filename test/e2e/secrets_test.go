package e2e

import (
	"strings"
	"testing"
)

func TestToolsNeverSeeKnitsOwnEnvironment(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	w.env = append(w.env, "KNIT_TOKEN=knit_supersecret", "KNIT_DB_DSN=postgres://u:p@h/db")
	w.write(map[string]string{"env.yaml": `apiVersion: knit.dev/v1
kind: Environment
metadata: {name: envcheck}
spec:
  teamName: qa
  envName: envcheck
  autoApprove: true
  components:
    - name: printer
      type: script
      variables: [{name: size, value: 3}]
      script: {apply: "env | sort > ` + w.path("seen.env") + `"}
`})
	w.ok("apply", "-f", "env.yaml")
	seen := w.read("seen.env")
	for _, line := range strings.Split(seen, "\n") {
		if strings.HasPrefix(line, "KNIT_") && !strings.HasPrefix(line, "KNIT_VAR_") {
			t.Errorf("the script saw knit's own %q", line)
		}
	}
	if !strings.Contains(seen, "KNIT_VAR_SIZE=3") || !strings.Contains(seen, "PATH=") {
		t.Errorf("the script lacks its input or PATH:\n%s", seen)
	}
}

func TestAShortSensitiveValueIsMaskedInLogsAndOutput(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	w.write(map[string]string{"env.yaml": `apiVersion: knit.dev/v1
kind: Environment
metadata: {name: short}
spec:
  teamName: qa
  envName: short
  autoApprove: true
  components:
    - name: vault
      type: script
      outputs: [{name: pin, sensitive: true}]
      script: {apply: "echo '{\"pin\": \"q7\"}'"}
    - name: app
      type: script
      variables: [{name: pin, valueFrom: vault.pin}]
      script: {apply: "echo \"connecting with pin $KNIT_VAR_PIN\" >&2"}
`})
	r := w.ok("apply", "-f", "env.yaml")
	logs := w.ok("logs", "qa/short", "app")
	out := w.ok("output", "qa/short")
	for what, text := range map[string]string{"apply": r.stdout + r.stderr, "logs": logs.stdout, "output": out.stdout} {
		if strings.Contains(text, "q7") {
			t.Errorf("%s shows the 2-character secret:\n%s", what, text)
		}
	}
	if !strings.Contains(logs.stdout, "connecting with pin (sensitive value)") {
		t.Errorf("the log does not mask the pin as a whole value:\n%s", logs.stdout)
	}
}
