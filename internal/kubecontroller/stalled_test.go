package kubecontroller_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"knit.dev/knit/internal/kubecontroller"
)

// TestDestroyProtectionKeepsTheObject: deleting an Environment whose
// component has destroyProtection refuses the teardown: Stalled=True with
// the engine's reason Refused, the finalizer and the file stay. Lifting
// the protection in the spec of the deleted object lets the teardown go on.
func TestDestroyProtectionKeepsTheObject(t *testing.T) {
	h := start(t)
	h.moduleConfigMap()
	doc := strings.Replace(shop("true"), "      outputs: [{name: id}]\n", "      outputs: [{name: id}]\n      destroyProtection: true\n", 1)
	h.apply(doc)
	e := h.waitEnv("shop", "Ready=True", condIs(kubecontroller.CondReady, metav1.ConditionTrue))
	if err := h.c.Delete(context.Background(), e); err != nil {
		t.Fatal(err)
	}
	e = h.waitEnv("shop", "Stalled=True", func(e *kubecontroller.Environment) bool {
		s, _ := cond(e, kubecontroller.CondStalled)
		return e.DeletionTimestamp != nil && s == metav1.ConditionTrue
	})
	if _, reason := cond(e, kubecontroller.CondStalled); reason != "Refused" {
		t.Errorf("Stalled reason %q:\n%s", reason, describe(e))
	}
	if !slices.Contains(e.Finalizers, kubecontroller.Finalizer) {
		t.Error("the finalizer went although the teardown was refused")
	}
	if _, ok := readFile(t, filepath.Join(h.files, "shop.txt")); !ok {
		t.Error("a protected component was destroyed")
	}

	h.apply(strings.Replace(doc, "destroyProtection: true", "destroyProtection: false", 1))
	h.waitGone("shop")
	if _, ok := readFile(t, filepath.Join(h.files, "shop.txt")); ok {
		t.Error("shop.txt survived the teardown once unprotected")
	}
}

// TestInvalidSpecIsStalled: a spec the environment file's parser refuses,
// and one naming a missing ConfigMap, are Stalled=True InvalidSpec with
// the parser's diagnostic (or the ConfigMap's name) as message, and
// nothing runs; deleting them needs no teardown.
func TestInvalidSpecIsStalled(t *testing.T) {
	h := start(t)
	h.apply(`apiVersion: knit.dev/v1
kind: Environment
metadata: {name: bad}
spec:
  teamName: qa
  envName: bad
  components:
    - {name: a, type: script, script: {apply: "echo '{}'"}, dependsOn: [nowhere]}
---
apiVersion: knit.dev/v1
kind: Environment
metadata: {name: nocm}
spec:
  teamName: qa
  envName: nocm
  sources: [{configMap: missing, path: modules/file}]
  components:
    - {name: a, type: script, script: {apply: "echo '{}'"}}
`)
	for name, want := range map[string]string{"bad": "nowhere", "nocm": "ConfigMap " + h.ns + "/missing"} {
		e := h.waitEnv(name, "Stalled=True", condIs(kubecontroller.CondStalled, metav1.ConditionTrue))
		c := meta.FindStatusCondition(e.Status.Conditions, kubecontroller.CondStalled)
		if c.Reason != kubecontroller.ReasonInvalidSpec || !strings.Contains(c.Message, want) {
			t.Errorf("%s: Stalled %s %q, want InvalidSpec naming %q", name, c.Reason, c.Message, want)
		}
		if e.Status.LastRun != "" {
			t.Errorf("%s: a run started: %s", name, e.Status.LastRun)
		}
		if err := h.c.Delete(context.Background(), e); err != nil {
			t.Fatal(err)
		}
		h.waitGone(name)
	}
}

// TestCloudKnitEnvironment: an Environment of CloudKnit's group
// (stable.cloudknit.io/v1) is reconciled as knit's: Ready=True, the file
// written.
func TestCloudKnitEnvironment(t *testing.T) {
	h := start(t)
	h.moduleConfigMap()
	h.apply(`apiVersion: stable.cloudknit.io/v1
kind: Environment
metadata: {name: legacy}
spec:
  teamName: qa
  envName: legacy
  autoApprove: true
  sources: [{configMap: file-module, path: modules/file}]
  components:
    - name: file
      type: terraform
      module: {source: ./modules/file}
      variables:
        - {name: path, value: FILES/legacy.txt}
        - {name: content, value: "from cloudknit"}
`)
	var e kubecontroller.CloudKnitEnvironment
	waitFor(t, "CloudKnit Environment Ready=True", func() bool {
		err := h.c.Get(context.Background(), key(h.ns, "legacy"), &e)
		return err == nil && meta.IsStatusConditionTrue(e.Status.Conditions, kubecontroller.CondReady)
	})
	if got, _ := readFile(t, filepath.Join(h.files, "legacy.txt")); got != "from cloudknit" {
		t.Errorf("legacy.txt = %q", got)
	}
	if err := h.c.Delete(context.Background(), &e); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the CloudKnit Environment gone", func() bool {
		_, err := os.Stat(filepath.Join(h.files, "legacy.txt"))
		return os.IsNotExist(err) && h.c.Get(context.Background(), key(h.ns, "legacy"), &e) != nil
	})
}

// TestTwoObjectsOneEnvironment: a second Environment object naming the
// teamName/envName another object applies is Stalled OwnedElsewhere,
// naming the first, and runs nothing: two objects would undo each other's
// applies. Once the first is deleted (torn down), the second applies.
func TestTwoObjectsOneEnvironment(t *testing.T) {
	h := start(t)
	doc := `apiVersion: knit.dev/v1
kind: Environment
metadata: {name: NAME}
spec:
  teamName: qa
  envName: twice
  autoApprove: true
  components:
    - {name: a, type: script, script: {apply: "echo NAME >> FILES/twice.txt; echo '{}'", destroy: "true"}}
`
	h.apply(strings.ReplaceAll(doc, "NAME", "first"))
	first := h.waitEnv("first", "Ready=True", condIs(kubecontroller.CondReady, metav1.ConditionTrue))
	h.apply(strings.ReplaceAll(doc, "NAME", "second"))
	e := h.waitEnv("second", "Stalled=True", condIs(kubecontroller.CondStalled, metav1.ConditionTrue))
	c := meta.FindStatusCondition(e.Status.Conditions, kubecontroller.CondStalled)
	if c.Reason != kubecontroller.ReasonOwnedElsewhere || !strings.Contains(c.Message, "knit.dev/"+h.ns+"/first") {
		t.Errorf("Stalled %s %q", c.Reason, c.Message)
	}
	if got, _ := readFile(t, filepath.Join(h.files, "twice.txt")); got != "first\n" {
		t.Errorf("twice.txt = %q: the second object ran", got)
	}
	if err := h.c.Delete(context.Background(), first); err != nil {
		t.Fatal(err)
	}
	h.waitGone("first")
	h.waitEnv("second", "Ready=True once the first is gone", condIs(kubecontroller.CondReady, metav1.ConditionTrue))
	if got, _ := readFile(t, filepath.Join(h.files, "twice.txt")); got != "first\nsecond\n" {
		t.Errorf("twice.txt = %q", got)
	}
}
