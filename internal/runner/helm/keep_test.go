package helm

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"knit.dev/knit/internal/kube"
	"knit.dev/knit/internal/kubetest"
	"knit.dev/knit/internal/runner"
)

// A teardown plan lists what Helm's uninstall leaves as kept, with why,
// never as deleted: a templated CRD and a ConfigMap marked
// helm.sh/resource-policy: keep, the CRD of crds/, and the namespace knit
// created while the kept ConfigMap lives in it. The teardown leaves
// exactly those, removes the rest and the release, and its log says what
// it kept and why.
func TestTeardownKeepsWhatHelmKeeps(t *testing.T) {
	f := newWidgets(t)
	f.c.Def.Chart.Values["keepSettings"] = true
	ns := f.ns
	f.apply(f.kubeInputs())
	p := f.plan(f.kubeInputs(), runner.PlanOptions{Destroy: true})
	kubetest.Want(t, "teardown plan", kubetest.Summary(p), []string{
		"delete Widget/" + ns + "/demo", "delete Release/" + ns + "/demo",
		"keep CustomResourceDefinition/" + gadgetsCRD, "keep ConfigMap/" + ns + "/demo-settings",
		"keep CustomResourceDefinition/" + widgetsCRD, "keep Namespace/" + ns,
	})
	reasons := map[string]string{}
	for _, rc := range p.Resources {
		reasons[rc.Address] = rc.Reason
	}
	for addr, want := range map[string]string{
		"CustomResourceDefinition/" + gadgetsCRD: "helm.sh/resource-policy: keep",
		"ConfigMap/" + ns + "/demo-settings":     "helm.sh/resource-policy: keep",
		"CustomResourceDefinition/" + widgetsCRD: "crds/ folder",
		"Namespace/" + ns:                        "holds objects the teardown keeps (knit will no longer delete it): ConfigMap/" + ns + "/demo-settings",
	} {
		if !strings.Contains(reasons[addr], want) {
			t.Errorf("reason of %s = %q, want %q", addr, reasons[addr], want)
		}
	}
	if p.Destroy != 2 || p.Add+p.Change != 0 {
		t.Errorf("plan counts add %d change %d destroy %d, want destroy 2 (the Widget, the release)", p.Add, p.Change, p.Destroy)
	}
	if _, err := f.r.Apply(t.Context(), f.c, p); err != nil {
		t.Fatalf("teardown: %v", err)
	}
	kc, err := kube.NewClient(f.cl.Config)
	if err != nil {
		t.Fatal(err)
	}
	if w, err := kc.Get(t.Context(), kube.Ref{APIVersion: "crds.knit.test/v1", Kind: "Widget", Namespace: ns, Name: "demo"}); err != nil || w != nil {
		t.Errorf("Widget after the teardown: %v %v", w, err)
	}
	for _, n := range []string{widgetsCRD, gadgetsCRD} {
		if crdExists(t, f.cl, n) == nil {
			t.Errorf("the teardown deleted CRD %s", n)
		}
	}
	if _, err := f.cl.Client.CoreV1().ConfigMaps(ns).Get(t.Context(), "demo-settings", metav1.GetOptions{}); err != nil {
		t.Errorf("the kept ConfigMap after the teardown: %v", err)
	}
	for _, want := range []string{
		"kept CustomResourceDefinition/" + gadgetsCRD + ": helm.sh/resource-policy: keep",
		"kept CustomResourceDefinition/" + widgetsCRD + ": a CRD of the chart's crds/ folder",
		"kept Namespace/" + ns + ": holds objects the teardown keeps",
	} {
		if !strings.Contains(f.log.String(), want) {
			t.Errorf("the teardown's log does not say %q:\n%s", want, f.log)
		}
	}
	if h, _ := f.cl.Client.CoreV1().Secrets(ns).List(t.Context(), metav1.ListOptions{LabelSelector: "owner=helm"}); len(h.Items) != 0 {
		t.Errorf("the release's records after the teardown: %d", len(h.Items))
	}
	if p := f.plan(f.kubeInputs(), runner.PlanOptions{Destroy: true}); p.HasChanges() {
		t.Errorf("teardown plan after the teardown: %q", kubetest.Summary(p))
	}
}
