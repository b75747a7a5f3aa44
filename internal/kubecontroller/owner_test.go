package kubecontroller_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"knit.dev/knit/internal/cli"
	"knit.dev/knit/internal/knit"
	"knit.dev/knit/internal/kubecontroller"
)

// cliEnv is qa/prod as a person applies it with knit apply: one script
// component writing FILES/cli.txt.
const cliEnv = `apiVersion: knit.dev/v1
kind: Environment
metadata: {name: prod}
spec:
  teamName: qa
  envName: prod
  autoApprove: true
  components:
    - {name: app, type: script, script: {apply: "echo cli > FILES/cli.txt; echo '{}'", destroy: "rm -f FILES/cli.txt"}}
`

// takerEnv is an Environment object naming qa/prod (ENV) with a
// component of its own; its teardown would remove every file.
const takerEnv = `apiVersion: knit.dev/v1
kind: Environment
metadata:
  name: taker
  annotations: {ANNOTATIONS}
spec:
  teamName: TEAM
  envName: prod
  autoApprove: true
  components:
    - {name: other, type: script, script: {apply: "echo object > FILES/object.txt; echo '{}'", destroy: "rm -f FILES/cli.txt FILES/object.txt"}}
`

func taker(team, annotations string) string {
	return strings.NewReplacer("TEAM", team, "ANNOTATIONS", annotations).Replace(takerEnv)
}

// cliApply applies cliEnv with the knit CLI on the controller's data dir
// (the same store) and returns the environment as the store has it.
func (h *harness) cliApply() knit.EnvironmentView {
	h.t.Helper()
	path := filepath.Join(h.t.TempDir(), "prod.yaml")
	if err := os.WriteFile(path, []byte(strings.ReplaceAll(cliEnv, "FILES", h.files)), 0o600); err != nil {
		h.t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	if code := cli.Run(context.Background(), []string{"apply", "-f", path, "--data-dir", h.dataDir}, strings.NewReader(""), &stdout, &stderr); code != 0 {
		h.t.Fatalf("knit apply: exit %d\n%s%s", code, stdout.String(), stderr.String())
	}
	return h.envView("qa/prod")
}

func (h *harness) envView(id string) knit.EnvironmentView {
	h.t.Helper()
	v, err := knit.NewRecords(h.k).Environment(context.Background(), id)
	if err != nil {
		h.t.Fatal(err)
	}
	return v
}

// untouched fails unless qa/prod is as the CLI left it: same revisions,
// status and components, its file there, the object's never written.
func (h *harness) untouched(before knit.EnvironmentView) {
	h.t.Helper()
	after := h.envView("qa/prod")
	if after.Revision != before.Revision || after.AppliedRevision != before.AppliedRevision || after.Status != before.Status {
		h.t.Errorf("qa/prod changed: revision %d→%d, applied %d→%d, status %s→%s", before.Revision, after.Revision,
			before.AppliedRevision, after.AppliedRevision, before.Status, after.Status)
	}
	if len(after.Components) != 1 || after.Components[0].Name != "app" {
		h.t.Errorf("qa/prod components: %+v", after.Components)
	}
	if after.LastRun == nil || after.LastRun.ID != before.LastRun.ID {
		h.t.Errorf("a run of qa/prod followed the CLI's: %+v", after.LastRun)
	}
	if got, _ := readFile(h.t, filepath.Join(h.files, "cli.txt")); got != "cli\n" {
		h.t.Errorf("cli.txt = %q", got)
	}
	if _, ok := readFile(h.t, filepath.Join(h.files, "object.txt")); ok {
		h.t.Error("the object's component ran")
	}
}

// stalledWith waits for Environment name to be Stalled and checks its
// reason and that the message names each of want.
func (h *harness) stalledWith(name, reason string, want ...string) *kubecontroller.Environment {
	h.t.Helper()
	e := h.waitEnv(name, "Stalled=True", condIs(kubecontroller.CondStalled, metav1.ConditionTrue))
	c := meta.FindStatusCondition(e.Status.Conditions, kubecontroller.CondStalled)
	if c.Reason != reason {
		h.t.Errorf("Stalled reason %s, want %s: %s", c.Reason, reason, c.Message)
	}
	for _, w := range want {
		if !strings.Contains(c.Message, w) {
			h.t.Errorf("Stalled message does not name %q: %s", w, c.Message)
		}
	}
	if e.Status.LastRun != "" {
		h.t.Errorf("a run started: %s", e.Status.LastRun)
	}
	return e
}

// TestEnvironmentAppliedByTheCLIIsNotAdopted: an Environment object in
// the namespace of team qa naming qa/prod, which knit apply applied on
// the same store, is Stalled OwnedElsewhere with a message saying where
// it was applied from and how an admin adopts it; nothing runs, and
// deleting the object destroys nothing.
func TestEnvironmentAppliedByTheCLIIsNotAdopted(t *testing.T) {
	h := start(t)
	before := h.cliApply()
	h.apply(taker("qa", ""))
	e := h.stalledWith("taker", kubecontroller.ReasonOwnedElsewhere, "qa/prod", "prod.yaml", "--allow-adopt "+h.ns, kubecontroller.AdoptAnnotation)
	h.untouched(before)

	if err := h.c.Delete(context.Background(), e); err != nil {
		t.Fatal(err)
	}
	h.waitGone("taker")
	h.untouched(before)
}

// TestAdoptAnnotationAloneAdoptsNothing: knit.dev/adopt: "true" on an
// object is not enough (anyone who may write the object may write its
// annotations): without --allow-adopt for its namespace it stays Stalled.
func TestAdoptAnnotationAloneAdoptsNothing(t *testing.T) {
	h := start(t)
	before := h.cliApply()
	h.apply(taker("qa", `knit.dev/adopt: "true"`))
	h.stalledWith("taker", kubecontroller.ReasonOwnedElsewhere, "--allow-adopt")
	h.untouched(before)
}

// TestAdoptionByAnAllowedNamespace: with --allow-adopt naming its
// namespace, an object still adopts nothing until it is annotated
// knit.dev/adopt: "true"; then its spec is applied over qa/prod, and the
// adoption is in knit's audit trail, naming the object and what it took
// over.
func TestAdoptionByAnAllowedNamespace(t *testing.T) {
	h := startWith(t, func(h *harness, o *kubecontroller.Options) {
		o.Tenancy.AllowAdopt = []string{h.ns}
	})
	before := h.cliApply()
	h.apply(taker("qa", ""))
	h.stalledWith("taker", kubecontroller.ReasonOwnedElsewhere)
	h.untouched(before)

	h.apply(taker("qa", `knit.dev/adopt: "true"`))
	h.waitEnv("taker", "Ready=True once adopted", condIs(kubecontroller.CondReady, metav1.ConditionTrue))
	if got, _ := readFile(t, filepath.Join(h.files, "object.txt")); got != "object\n" {
		t.Errorf("object.txt = %q", got)
	}
	audit, err := knit.NewRecords(h.k).Audit(context.Background(), knit.AuditFilter{Env: "qa/prod"})
	if err != nil {
		t.Fatal(err)
	}
	adopted := 0
	for _, a := range audit.Items {
		if a.Action == "adopt" {
			adopted++
			if a.Actor != "kubernetes:"+h.ns+"/taker" || !strings.Contains(a.Detail, "prod.yaml") || !strings.Contains(a.Reason, "--allow-adopt") {
				t.Errorf("adopt entry: %+v", a)
			}
		}
	}
	if adopted != 1 {
		t.Errorf("%d adopt entries in the audit trail: %+v", adopted, audit.Items)
	}
}

// TestDeletingAnObjectWhoseStatusNamesAnotherEnvironment: status.env is
// only what an object says (whoever may write its status may forge it):
// deleting an object whose status names qa/prod, which the CLI applied,
// tears nothing down.
func TestDeletingAnObjectWhoseStatusNamesAnotherEnvironment(t *testing.T) {
	h := start(t)
	before := h.cliApply()
	// An object that never runs (its spec does not parse), its status
	// then forged to name qa/prod.
	h.apply(`apiVersion: knit.dev/v1
kind: Environment
metadata: {name: forger}
spec:
  teamName: qa
  envName: forger
  components:
    - {name: a, type: script, script: {apply: "echo '{}'"}, dependsOn: [nowhere]}
`)
	e := h.waitEnv("forger", "Stalled=True", condIs(kubecontroller.CondStalled, metav1.ConditionTrue))
	patch := client.MergeFrom(e.DeepCopyObject().(client.Object))
	e.Status.Env = "qa/prod"
	if err := h.c.Status().Patch(context.Background(), e, patch); err != nil {
		t.Fatal(err)
	}
	if err := h.c.Delete(context.Background(), e); err != nil {
		t.Fatal(err)
	}
	h.waitGone("forger")
	h.untouched(before)
}
