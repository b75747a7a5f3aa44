package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
)

var (
	crdsGVR    = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}
	widgetsGVR = schema.GroupVersionResource{Group: "crds.knit.test", Version: "v1", Resource: "widgets"}
	// crdTests is held by each test that creates and deletes the
	// cluster-scoped CRDs *.crds.knit.test on the shared API server, so
	// those tests run one at a time while the rest run in parallel.
	crdTests sync.Mutex
)

// holdCRDs makes t the only test using the *.crds.knit.test CRDs until it
// ends (its cleanups, registered after, run first).
func holdCRDs(t *testing.T) {
	crdTests.Lock()
	t.Cleanup(crdTests.Unlock)
}

// widgetsEnv is an environment with the chart of
// internal/runner/helm/testdata/crds (a CRD in crds/, a Widget of its kind
// in templates/, a templated CRD marked helm.sh/resource-policy: keep),
// gated (autoApprove false), released into ns.
func widgetsEnv(ns, extra string) string {
	return fmt.Sprintf(`apiVersion: knit.dev/v1
kind: Environment
metadata: {name: kcrds}
spec:
  teamName: qa
  envName: kcrds
  kubeconfig: {path: ./kubeconfig}
%s  components:
    - name: widgets
      type: helm
      chart: {path: ./charts/widgets, namespace: %s}
`, extra, ns)
}

// A chart with crds/ and a custom resource of its kind installs on a
// cluster without the CRD in one apply, its plan listing the CRD and the
// custom resource known after apply; a second apply is up to date. Its
// teardown plan shows the CRDs Helm keeps as kept, never DESTROY; the
// teardown leaves them, and its summary says what it left and why.
func TestHelmCRDsFolderInstallsAndTeardownKeeps(t *testing.T) {
	t.Parallel()
	holdCRDs(t)
	k := newKubeWorld(t)
	dyn := dynamic.NewForConfigOrDie(k.c.Config)
	crds := []string{"widgets.crds.knit.test", "gadgets.crds.knit.test"}
	removeCRDs(t, dyn, crds...)
	t.Cleanup(func() { removeCRDs(t, dyn, crds...) })
	k.widgetsChart()
	ns := k.ns + "-w"
	k.write(map[string]string{"env.yaml": widgetsEnv(ns, "")})

	r := k.knit("plan", "-f", "env.yaml", "--detailed-exitcode")
	if r.code != 2 {
		t.Fatalf("plan: exit %d, want 2\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	for _, want := range []string{"+   CustomResourceDefinition/widgets.crds.knit.test", "+   Widget/" + ns + "/widgets", "known after apply"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("knit plan does not show %q:\n%s", want, r.stdout)
		}
	}
	k.ok("apply", "-f", "env.yaml", "--auto-approve")
	if _, err := dyn.Resource(widgetsGVR).Namespace(ns).Get(context.Background(), "widgets", metav1.GetOptions{}); err != nil {
		t.Fatalf("the Widget after one apply: %v", err)
	}
	if out := k.ok("apply", "-f", "env.yaml", "--auto-approve").stdout; !strings.Contains(out, "up to date") {
		t.Errorf("the second apply is not up to date:\n%s", out)
	}

	k.write(map[string]string{"env.yaml": widgetsEnv(ns, "  teardown: true\n")})
	r = k.knit("apply", "-f", "env.yaml")
	if r.code != 3 {
		t.Fatalf("gated teardown: exit %d, want 3\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	for _, want := range []string{
		"=   CustomResourceDefinition/gadgets.crds.knit.test   (kept: helm.sh/resource-policy: keep",
		"=   CustomResourceDefinition/widgets.crds.knit.test   (kept: a CRD of the chart's crds/ folder",
		"-   Widget/" + ns + "/widgets   <-- DESTROY",
	} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("the teardown plan does not show %q:\n%s", want, r.stdout)
		}
	}
	if strings.Contains(r.stdout, "CustomResourceDefinition/gadgets.crds.knit.test   <-- DESTROY") {
		t.Errorf("the teardown plan destroys a kept CRD:\n%s", r.stdout)
	}
	js := k.knit("apply", "-f", "env.yaml", "-o", "json").stdout
	if !strings.Contains(js, `"action": "keep"`) || !strings.Contains(js, `"reason": "a CRD of the chart's crds/ folder`) {
		t.Errorf("the JSON teardown plan lacks the kept CRDs and why:\n%s", js)
	}
	out := k.ok("approve", "qa/kcrds", "widgets", "--reason", "decommission").stdout
	for _, want := range []string{"left in place (kept, not destroyed): 2 resources",
		"widgets: CustomResourceDefinition/gadgets.crds.knit.test: helm.sh/resource-policy: keep"} {
		if !strings.Contains(out, want) {
			t.Errorf("the teardown's summary does not say %q:\n%s", want, out)
		}
	}
	for _, n := range crds {
		if _, err := dyn.Resource(crdsGVR).Get(context.Background(), n, metav1.GetOptions{}); err != nil {
			t.Errorf("CRD %s after the teardown: %v", n, err)
		}
	}
	if _, err := k.c.Client.CoreV1().Namespaces().Get(context.Background(), ns, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("namespace %s (nothing kept in it) after the teardown: %v", ns, err)
	}
}

// removeCRDs deletes the CRDs named and waits until they are gone.
func removeCRDs(t *testing.T, dyn dynamic.Interface, names ...string) {
	t.Helper()
	for _, n := range names {
		if err := dyn.Resource(crdsGVR).Delete(context.Background(), n, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			t.Fatal(err)
		}
	}
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(100 * time.Millisecond) {
		left := 0
		for _, n := range names {
			if _, err := dyn.Resource(crdsGVR).Get(context.Background(), n, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
				left++
			}
		}
		if left == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("gave up waiting for %d CRDs to go", left)
		}
	}
}

// widgetsChart writes the kubeconfig and copies the widgets chart into
// charts/widgets.
func (k *kubeWorld) widgetsChart() {
	k.t.Helper()
	if err := os.WriteFile(k.path("kubeconfig"), k.c.Kubeconfig, 0o600); err != nil {
		k.t.Fatal(err)
	}
	if err := os.CopyFS(k.path("charts/widgets"), os.DirFS(filepath.Join(repo, "internal", "runner", "helm", "testdata", "crds", "widgets"))); err != nil {
		k.t.Fatal(err)
	}
}

// upstreamCRDsEnv: operator (the widgets chart: CRDs in crds/ and in its
// templates) and, downstream, issuers: a manifests component holding a
// Widget and a cluster-scoped Gadget, custom resources of those CRDs, in
// a namespace of its own (NS-iss).
func upstreamCRDsEnv(ns, extra string) string {
	return fmt.Sprintf(`apiVersion: knit.dev/v1
kind: Environment
metadata: {name: kup}
spec:
  teamName: qa
  envName: kup
  kubeconfig: {path: ./kubeconfig}
%s  components:
    - name: operator
      type: helm
      chart: {path: ./charts/widgets, namespace: %[2]s}
    - name: issuers
      type: manifests
      dependsOn: [operator]
      manifests: {path: ./issuers, namespace: %[2]s-iss}
`, extra, ns)
}

// Custom resources whose CRDs an upstream component creates in the same
// run: on a cluster without the CRDs, knit plan succeeds (exit 2), the
// downstream's custom resources planned as creates known after apply,
// the reason naming the upstream; a gated first install stops once and
// one approval of its change set applies both; after the CRD is deleted
// (its custom resources with it), one drift --reconcile restores both.
func TestCustomResourcesOfAnUpstreamsCRDs(t *testing.T) {
	t.Parallel()
	holdCRDs(t)
	k := newKubeWorld(t)
	dyn := dynamic.NewForConfigOrDie(k.c.Config)
	crds := []string{"widgets.crds.knit.test", "gadgets.crds.knit.test"}
	removeCRDs(t, dyn, crds...)
	t.Cleanup(func() { removeCRDs(t, dyn, crds...) })
	k.widgetsChart()
	ns := k.ns + "-up"
	iss := ns + "-iss"
	k.write(map[string]string{
		"env.yaml":            upstreamCRDsEnv(ns, ""),
		"issuers/widget.yaml": "apiVersion: crds.knit.test/v1\nkind: Widget\nmetadata: {name: issued}\nspec: {size: 3}\n",
		"issuers/gadget.yaml": "apiVersion: crds.knit.test/v1\nkind: Gadget\nmetadata: {name: issued}\n",
	})
	r := k.knit("plan", "-f", "env.yaml", "--detailed-exitcode")
	if r.code != 2 {
		t.Fatalf("plan: exit %d, want 2\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	for _, want := range []string{
		"+   Widget/" + iss + "/issued", "+   Gadget/issued",
		"Widget/" + iss + "/issued: known after apply: upstream operator creates CustomResourceDefinition/widgets.crds.knit.test",
		"Gadget/issued: known after apply: upstream operator creates CustomResourceDefinition/gadgets.crds.knit.test",
	} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("knit plan does not show %q:\n%s", want, r.stdout)
		}
	}

	r = k.knit("apply", "-f", "env.yaml")
	if r.code != 3 {
		t.Fatalf("gated apply: exit %d, want 3\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	cs := k.pendingChange("qa/kup", "operator", "issuers")
	k.ok("approve", "qa/kup", "--change", cs.Checksum[:12], "--reason", "one review")
	for _, res := range []schema.GroupVersionResource{widgetsGVR, {Group: "crds.knit.test", Version: "v1", Resource: "gadgets"}} {
		ri := dyn.Resource(res).Namespace(iss)
		if res.Resource == "gadgets" {
			if _, err := dyn.Resource(res).Get(context.Background(), "issued", metav1.GetOptions{}); err != nil {
				t.Errorf("%s after one approval: %v", res.Resource, err)
			}
			continue
		}
		if _, err := ri.Get(context.Background(), "issued", metav1.GetOptions{}); err != nil {
			t.Errorf("%s after one approval: %v", res.Resource, err)
		}
	}
	if st := k.status("qa/kup"); st.Status != "provisioned" {
		t.Errorf("after one approval: %+v", st)
	}

	// The CRD the operator's templates hold is deleted, and the Gadget of
	// its kind with it: one reconcile restores both, in order.
	removeCRDs(t, dyn, "gadgets.crds.knit.test")
	r = k.knit("drift", "qa/kup", "--reconcile", "--auto-approve")
	if r.code != 0 {
		t.Fatalf("drift --reconcile: exit %d, want 0\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	if _, err := dyn.Resource(schema.GroupVersionResource{Group: "crds.knit.test", Version: "v1", Resource: "gadgets"}).Get(context.Background(), "issued", metav1.GetOptions{}); err != nil {
		t.Errorf("the Gadget after one reconcile: %v\n%s", err, r.stdout)
	}
	if r := k.knit("drift", "qa/kup"); r.code != 0 {
		t.Errorf("drift after the reconcile: exit %d, want 0 (in sync)\n%s", r.code, r.stdout)
	}
}
