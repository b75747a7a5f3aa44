package e2e

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
)

// stagingGate is a repository policy: staging's app waits for a person
// whenever it creates something.
const stagingGate = `package knit

require_approval contains {"msg": "staging takes a look first", "component": "app"} if {
	input.environment.env == "staging"
	some c in input.components
	c.name == "app"
	c.changes.add > 0
}
`

// TestAReleaseThatWaitsForApprovalInAStageMovesOnOnceApproved (issue 37
// item 1): a require_approval policy gates staging's apply of R0. The
// pipeline says AwaitingApproval with the change set's checksum (it said
// Applying); one knit approve --change later, the run that carries the
// approval out is the stage's: R0 is verified in staging (it was
// recorded ApplyFailed) and enters prod after the soak.
func TestAReleaseThatWaitsForApprovalInAStageMovesOnOnceApproved(t *testing.T) {
	t.Parallel()
	requireTofu(t)
	w := newWorld(t)
	probe := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) { fmt.Fprint(rw, "ok") }))
	defer probe.Close()
	_, s := webTrain(t, w, probe.URL, []string{"dev", "staging", "prod"}, `    - {name: dev, file: ../stages/dev.yaml}
    - {name: staging, file: ../stages/staging.yaml, soak: 1s}
    - {name: prod, file: ../stages/prod.yaml}
`, map[string]string{"policies/gate.rego": stagingGate})
	admin := []string{"KNIT_SERVER=" + s.url, "KNIT_TOKEN=" + s.token}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("knit pipeline status web:\n%s\nknit approvals shop/staging:\n%s", w.knitWith(admin, "pipeline", "status", "web").stdout,
				w.knitWith(admin, "approvals", "shop/staging").stdout)
		}
	})
	checksum := regexp.MustCompile(`--change ([0-9a-f]{16,})`)
	var msg, r0 string
	s.eventually("staging says AwaitingApproval with the change set's checksum", func() bool {
		for _, st := range w.pipelineStatus(admin).Stages {
			if st.Name == "staging" && st.Waiting != nil && st.Waiting.Reason == "AwaitingApproval" {
				msg, r0 = st.Waiting.Message, st.Waiting.Release
			}
		}
		return checksum.MatchString(msg)
	})
	sum := checksum.FindStringSubmatch(msg)[1]
	op := strings.TrimSpace(w.ok("token", "create", "carol", "--role", "operator", "--team", "shop").stdout)
	if r := w.knitWith([]string{"KNIT_SERVER=" + s.url, "KNIT_TOKEN=" + op}, "approve", "shop/staging", "--change", sum); r.code != 0 {
		t.Fatalf("knit approve --change %s: exit %d\n%s%s", sum, r.code, r.stdout, r.stderr)
	}
	s.eventually("R0 verified in staging, then in prod", func() bool {
		p := w.pipelineStatus(admin)
		staging, _, _, _ := p.stage("staging")
		prod, _, _, _ := p.stage("prod")
		return staging == r0 && prod == r0
	})
	if _, last, _, reason := w.pipelineStatus(admin).stage("staging"); last != r0+" succeeded" || reason != "" {
		t.Errorf("staging's last: %q %q, want %s succeeded", last, reason, r0)
	}
}
