package kubecontroller_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"knit.dev/knit/internal/knit"
	"knit.dev/knit/internal/kubecontroller"
)

// rolloutEnv writes CONTENT to FILES/app.txt under onFailure rollback;
// its health check passes only while the file says good.
const rolloutEnv = `apiVersion: knit.dev/v1
kind: Environment
metadata: {name: roll}
spec:
  teamName: qa
  envName: roll
  autoApprove: true
  rollout: {onFailure: rollback}
  components:
    - name: app
      type: script
      script: {apply: "echo CONTENT > FILES/app.txt; echo '{}'", destroy: "rm -f FILES/app.txt"}
      health:
        - {name: good, command: "grep -qx good FILES/app.txt"}
`

// TestControllerRollsBackOnFailedVerification: an Environment under
// rollout.onFailure: rollback whose new generation fails its health check
// is rolled back by the controller, as knit apply and knit serve do: a
// run of kind rollback re-applies the revision that verified (the file
// says good again), the object is Stalled RolledBack naming the failed
// check and the revision, and the failed generation is not applied again
// until the spec changes.
func TestControllerRollsBackOnFailedVerification(t *testing.T) {
	h := start(t)
	file := filepath.Join(h.files, "app.txt")
	h.apply(strings.ReplaceAll(rolloutEnv, "CONTENT", "good"))
	good := h.waitEnv("roll", "Ready=True", condIs(kubecontroller.CondReady, metav1.ConditionTrue))

	h.apply(strings.ReplaceAll(rolloutEnv, "CONTENT", "bad"))
	e := h.waitEnv("roll", "Stalled=True after the bad generation", func(e *kubecontroller.Environment) bool {
		return e.Generation > good.Generation && condIs(kubecontroller.CondStalled, metav1.ConditionTrue)(e)
	})
	c := meta.FindStatusCondition(e.Status.Conditions, kubecontroller.CondStalled)
	if c.Reason != kubecontroller.ReasonRolledBack || !strings.Contains(c.Message, "good") || !strings.Contains(c.Message, "back to revision 1") {
		t.Errorf("Stalled %s: %s", c.Reason, c.Message)
	}
	if got, _ := readFile(t, file); got != "good\n" {
		t.Errorf("app.txt = %q after the rollback", got)
	}
	last, err := h.k.RunRecord(context.Background(), e.Status.LastRun)
	if err != nil {
		t.Fatal(err)
	}
	if last.Kind != "rollback" || last.Status != "succeeded" || last.Actor != "kubernetes:"+h.ns+"/roll" {
		t.Errorf("the object's last run: %s %s by %s", last.Kind, last.Status, last.Actor)
	}
	// Fixed, the next generation applies; the failed one was never
	// applied again in between (no run beside these four).
	h.apply(strings.ReplaceAll(rolloutEnv, "CONTENT", "good"))
	h.waitEnv("roll", "Ready=True once fixed", func(e *kubecontroller.Environment) bool {
		return e.Generation > good.Generation+1 && condIs(kubecontroller.CondReady, metav1.ConditionTrue)(e)
	})
	runs, err := knit.NewRecords(h.k).History(context.Background(), "qa/roll", "", 20)
	if err != nil {
		t.Fatal(err)
	}
	var kinds []string
	for _, r := range runs.Items {
		if r.Kind != "drift" {
			kinds = append(kinds, string(r.Kind))
		}
	}
	if strings.Join(kinds, " ") != "apply rollback apply apply" {
		t.Errorf("runs of qa/roll, newest first: %v", kinds)
	}
}
