package kubecontroller_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"knit.dev/knit/internal/kubecontroller"
	"knit.dev/knit/internal/testtools"
)

// shopEnv has a terraform component (the module from a ConfigMap) that
// manages FILES/shop.txt and a script component after it that writes
// FILES/note.txt; autoApprove is AUTO.
const shopEnv = `apiVersion: knit.dev/v1
kind: Environment
metadata: {name: shop}
spec:
  teamName: qa
  envName: shop-AUTO
  autoApprove: AUTO
  sources: [{configMap: file-module, path: modules/file}]
  components:
    - name: file
      type: terraform
      module: {source: ./modules/file}
      outputs: [{name: id}]
      variables:
        - {name: path, value: FILES/shop.txt}
        - {name: content, value: "hello from a custom resource"}
    - name: note
      type: script
      dependsOn: [file]
      variables: [{name: id, valueFrom: file.id}]
      script:
        apply: "echo \"$KNIT_VAR_ID\" > FILES/note.txt; echo '{}'"
        destroy: "rm -f FILES/note.txt"
`

func shop(auto string) string {
	return replaceAll(shopEnv, "AUTO", auto)
}

// TestEnvironmentReadyDriftedAndTornDown: kubectl apply of an Environment
// with a terraform and a script component reaches Ready=True with both
// components applied; an out-of-band edit of the file the terraform
// component manages shows Drifted=True on the next re-plan; deleting the
// object destroys both components and only then removes the finalizer.
func TestEnvironmentReadyDriftedAndTornDown(t *testing.T) {
	h := start(t)
	h.moduleConfigMap()
	h.apply(shop("true"))

	e := h.waitEnv("shop", "Ready=True", condIs(kubecontroller.CondReady, metav1.ConditionTrue))
	if got, _ := readFile(t, filepath.Join(h.files, "shop.txt")); got != "hello from a custom resource" {
		t.Errorf("shop.txt = %q", got)
	}
	if _, ok := readFile(t, filepath.Join(h.files, "note.txt")); !ok {
		t.Error("the script component did not run")
	}
	if !slices.Contains(e.Finalizers, kubecontroller.Finalizer) {
		t.Errorf("finalizers %v", e.Finalizers)
	}
	if e.Status.Env != "qa/shop-true" || len(e.Status.Components) != 2 ||
		e.Status.Components[0].Name != "file" || e.Status.Components[0].Status != "applied" ||
		e.Status.Components[1].Name != "note" || e.Status.Components[1].Status != "applied" {
		t.Errorf("status:\n%s", describe(e))
	}
	for _, c := range []string{kubecontroller.CondReconciling, kubecontroller.CondAwaitingApproval, kubecontroller.CondStalled} {
		if s, _ := cond(e, c); s != metav1.ConditionFalse {
			t.Errorf("%s = %q:\n%s", c, s, describe(e))
		}
	}

	// Out of band: the file is edited by hand.
	if err := os.WriteFile(filepath.Join(h.files, "shop.txt"), []byte("edited by hand"), 0o644); err != nil {
		t.Fatal(err)
	}
	e = h.waitEnv("shop", "Drifted=True", condIs(kubecontroller.CondDrifted, metav1.ConditionTrue))
	if _, reason := cond(e, kubecontroller.CondDrifted); reason != "Drifted" {
		t.Errorf("Drifted reason %q", reason)
	}
	if s, reason := cond(e, kubecontroller.CondReady); s != metav1.ConditionFalse || reason != "Drifted" {
		t.Errorf("Ready = %s %s while drifted", s, reason)
	}

	// Put back, the next re-plan finds it in sync again. (The local
	// provider reads changed content as a deleted file, which a teardown
	// would then leave alone.)
	if err := os.WriteFile(filepath.Join(h.files, "shop.txt"), []byte("hello from a custom resource"), 0o644); err != nil {
		t.Fatal(err)
	}
	e = h.waitEnv("shop", "Drifted=False", condIs(kubecontroller.CondDrifted, metav1.ConditionFalse))
	if s, reason := cond(e, kubecontroller.CondReady); s != metav1.ConditionTrue {
		t.Errorf("Ready = %s %s once in sync again", s, reason)
	}

	// Deletion tears down; the object goes only after.
	if err := h.c.Delete(context.Background(), e); err != nil {
		t.Fatal(err)
	}
	h.waitGone("shop")
	for _, f := range []string{"shop.txt", "note.txt"} {
		if _, ok := readFile(t, filepath.Join(h.files, f)); ok {
			t.Errorf("%s survived the teardown", f)
		}
	}
}

// TestModuleFromGit: an Environment whose module comes from a git
// repository (here file://, tagged v1) needs no ConfigMap: it is applied
// as the CLI applies one.
func TestModuleFromGit(t *testing.T) {
	h := start(t)
	repo := t.TempDir()
	testtools.RunGit(t, repo, "init", "-q")
	testtools.WriteFiles(t, repo, map[string]string{"file/main.tf": fileModule})
	testtools.RunGit(t, repo, "add", ".")
	testtools.RunGit(t, repo, "commit", "-qm", "file module")
	testtools.RunGit(t, repo, "tag", "v1")
	h.apply(`apiVersion: knit.dev/v1
kind: Environment
metadata: {name: fromgit}
spec:
  teamName: qa
  envName: fromgit
  autoApprove: true
  components:
    - name: file
      type: terraform
      module: {source: "git::file://` + repo + `//file?ref=v1"}
      variables:
        - {name: path, value: FILES/git.txt}
        - {name: content, value: "from git"}
`)
	h.waitEnv("fromgit", "Ready=True", condIs(kubecontroller.CondReady, metav1.ConditionTrue))
	if got, _ := readFile(t, filepath.Join(h.files, "git.txt")); got != "from git" {
		t.Errorf("git.txt = %q", got)
	}
}
