package helm

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"knit.dev/knit/internal/kube"
	"knit.dev/knit/internal/kubetest"
	"knit.dev/knit/internal/runner"
	"knit.dev/knit/internal/spec"
	"knit.dev/knit/internal/testtools"
)

// The chart of testdata/crds (see its README): a CRD in crds/, a custom
// resource of its kind in templates/, a templated CRD marked keep.
var (
	crdGVR    = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}
	widgetGVR = schema.GroupVersionResource{Group: "crds.knit.test", Version: "v1", Resource: "widgets"}
)

const (
	widgetsCRD = "widgets.crds.knit.test"
	gadgetsCRD = "gadgets.crds.knit.test"
)

// newChart returns a fixture for the chart folder src, released as
// "demo" into a namespace nobody created yet; the CRDs named are removed
// first, so the cluster is fresh for them.
func newChart(t *testing.T, src string, crds ...string) *fixture {
	cl := kubetest.Start(t)
	removeCRDs(t, cl, crds...)
	dir := t.TempDir()
	if err := os.CopyFS(filepath.Join(dir, "charts", "demo"), os.DirFS(src)); err != nil {
		t.Fatal(err)
	}
	ns := cl.Namespace(t)
	if err := cl.Client.CoreV1().Namespaces().Delete(t.Context(), ns, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	ns += "-crd"
	env := &spec.Environment{Dir: dir, Spec: spec.EnvSpec{TeamName: "t", EnvName: "e"}}
	def := &spec.Component{Name: "demo", Type: spec.TypeHelm,
		Chart:      &spec.Chart{Path: "./charts/demo", Namespace: ns, Values: map[string]any{}},
		Kubeconfig: &spec.Kubeconfig{ValueFrom: "cluster.kubeconfig"},
	}
	env.Spec.Components = []*spec.Component{def}
	log := &bytes.Buffer{}
	return &fixture{t: t, cl: cl, r: New(Options{DataDir: t.TempDir()}), ns: ns, log: log,
		c: runner.Component{Env: "t/e", Spec: env, Def: def, WorkDir: t.TempDir(), Log: log}}
}

func newWidgets(t *testing.T) *fixture {
	return newChart(t, filepath.Join("testdata", "crds", "widgets"), widgetsCRD, gadgetsCRD)
}

// removeCRDs deletes the CRDs named and waits until they are gone.
func removeCRDs(t *testing.T, cl *kubetest.Cluster, names ...string) {
	t.Helper()
	dyn := dynamic.NewForConfigOrDie(cl.Config)
	for _, n := range names {
		if err := dyn.Resource(crdGVR).Delete(context.Background(), n, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			t.Fatal(err)
		}
	}
	eventually(t, "CRDs removed", func() bool {
		for _, n := range names {
			if _, err := dyn.Resource(crdGVR).Get(context.Background(), n, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
				return false
			}
		}
		return true
	})
}

func crdExists(t *testing.T, cl *kubetest.Cluster, name string) *unstructured.Unstructured {
	t.Helper()
	crd, err := dynamic.NewForConfigOrDie(cl.Config).Resource(crdGVR).Get(t.Context(), name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	return crd
}

// A first install of a chart with crds/ and a custom resource of its kind
// in templates/, on a cluster without the CRD: the plan lists the CRD and
// the custom resource (the chart sees the CRD's API version as it will at
// apply), says the custom resource is known after apply, and one apply
// installs both; the next plan changes nothing, and an upgrade leaves
// crds/ alone as Helm does, the plan saying so.
func TestCRDsFolderInstallsInOneApply(t *testing.T) {
	f := newWidgets(t)
	ns := f.ns
	p := f.plan(f.kubeInputs(), runner.PlanOptions{})
	kubetest.Want(t, "first install plan", kubetest.Summary(p), []string{
		"create Namespace/" + ns, "create CustomResourceDefinition/" + widgetsCRD,
		"create CustomResourceDefinition/" + gadgetsCRD, "create ConfigMap/" + ns + "/demo-settings", "create Widget/" + ns + "/demo",
	})
	if len(p.Notes) != 1 || !strings.Contains(p.Notes[0], "Widget/"+ns+"/demo") || !strings.Contains(p.Notes[0], "known after apply") {
		t.Errorf("notes %q do not say the Widget is known after apply", p.Notes)
	}
	if crdExists(t, f.cl, widgetsCRD) != nil {
		t.Fatal("the plan created the CRD")
	}
	var defines []string
	for _, k := range p.Defines {
		defines = append(defines, k.CRD+" "+k.Kind)
	}
	kubetest.Want(t, "kinds the plan defines", defines, []string{widgetsCRD + " Widget", gadgetsCRD + " Gadget"})
	if _, err := f.r.Apply(t.Context(), f.c, p); err != nil {
		t.Fatalf("apply: %v\n%s", err, f.log)
	}
	w, err := dynamic.NewForConfigOrDie(f.cl.Config).Resource(widgetGVR).Namespace(ns).Get(t.Context(), "demo", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("the Widget after the apply: %v", err)
	}
	if size, _, _ := unstructured.NestedInt64(w.Object, "spec", "size"); size != 1 {
		t.Errorf("Widget spec.size = %d", size)
	}
	if !strings.Contains(f.log.String(), "created CustomResourceDefinition/"+widgetsCRD+" (the chart's crds/)") {
		t.Errorf("the log does not say the CRD was created:\n%s", f.log)
	}
	if crd := crdExists(t, f.cl, widgetsCRD); crd == nil || crd.GetLabels()[managedByLabel] == "Helm" {
		t.Errorf("CRD of crds/ = %v: want it outside the release, as Helm creates it", crd)
	}
	p = f.plan(f.kubeInputs(), runner.PlanOptions{})
	if p.HasChanges() {
		t.Errorf("plan after the install: %v", kubetest.Summary(p))
	}
	if !slices.ContainsFunc(p.Notes, func(n string) bool { return strings.Contains(n, "crds/ folder at the first install only") }) {
		t.Errorf("notes %q do not say an upgrade leaves crds/ alone", p.Notes)
	}

	// A changed crds/ CRD is neither shown nor applied by the upgrade.
	crdFile := filepath.Join(f.c.Spec.Dir, "charts", "demo", "crds", "widgets.yaml")
	b, err := os.ReadFile(crdFile)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(crdFile, bytes.Replace(b, []byte("singular: widget}"), []byte("singular: widget, shortNames: [wd]}"), 1), 0o644); err != nil {
		t.Fatal(err)
	}
	f.c.Def.Chart.Values["size"] = int64(2)
	p = f.plan(f.kubeInputs(), runner.PlanOptions{})
	kubetest.Want(t, "upgrade plan", kubetest.Summary(p), []string{
		"update Release/" + ns + "/demo size", "update ConfigMap/" + ns + "/demo-settings data.size", "update Widget/" + ns + "/demo spec.size",
	})
	if _, err := f.r.Apply(t.Context(), f.c, p); err != nil {
		t.Fatalf("upgrade: %v", err)
	}
	if short, _, _ := unstructured.NestedStringSlice(crdExists(t, f.cl, widgetsCRD).Object, "spec", "names", "shortNames"); len(short) > 0 {
		t.Errorf("the upgrade changed the crds/ CRD: shortNames %v", short)
	}
}

// The prometheus-operator CRDs this repository carries (1.3 MB, see
// testdata/prometheus-operator) in a chart's crds/, with an Alertmanager
// and a ServiceMonitor in its templates, install on a cluster without
// them in one apply, the plan listing every CRD.
func TestCRDsFolderPrometheusOperator(t *testing.T) {
	names := []string{"alertmanagers", "podmonitors", "probes", "prometheusrules", "servicemonitors", "thanosrulers"}
	var crds []string
	for _, n := range names {
		crds = append(crds, n+".monitoring.coreos.com")
	}
	src := t.TempDir()
	bundle, err := os.ReadFile(filepath.Join(testtools.ModuleRoot(t), "testdata", "prometheus-operator", "crds.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	testtools.WriteFiles(t, src, map[string]string{
		"Chart.yaml":     "apiVersion: v2\nname: monitoring\nversion: 0.1.0\n",
		"crds/crds.yaml": string(bundle),
		"templates/alertmanager.yaml": `apiVersion: monitoring.coreos.com/v1
kind: Alertmanager
metadata: {name: main}
spec: {replicas: 1}
`,
		"templates/servicemonitor.yaml": `apiVersion: monitoring.coreos.com/v1
kind: ServiceMonitor
metadata: {name: web}
spec:
  selector: {matchLabels: {app: web}}
  endpoints: [{port: http}]
`,
	})
	f := newChart(t, src, crds...)
	t.Cleanup(func() { removeCRDs(t, f.cl, crds...) }) // others apply them as they need them
	p := f.plan(f.kubeInputs(), runner.PlanOptions{})
	want := []string{"create Namespace/" + f.ns}
	for _, c := range crds {
		want = append(want, "create CustomResourceDefinition/"+c)
	}
	got := kubetest.Summary(p)
	slices.Sort(got[1 : len(got)-2])
	kubetest.Want(t, "plan", got, append(want, "create Alertmanager/"+f.ns+"/main", "create ServiceMonitor/"+f.ns+"/web"))
	if _, err := f.r.Apply(t.Context(), f.c, p); err != nil {
		t.Fatalf("apply: %v", err)
	}
	kc, err := kube.NewClient(f.cl.Config)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range []kube.Ref{{APIVersion: "monitoring.coreos.com/v1", Kind: "Alertmanager", Namespace: f.ns, Name: "main"},
		{APIVersion: "monitoring.coreos.com/v1", Kind: "ServiceMonitor", Namespace: f.ns, Name: "web"}} {
		if live, err := kc.Get(t.Context(), r); err != nil || live == nil {
			t.Errorf("%s after the apply: %v %v", r.Address(), live, err)
		}
	}
	if p := f.plan(f.kubeInputs(), runner.PlanOptions{}); p.HasChanges() {
		t.Errorf("plan after the install: %v", kubetest.Summary(p))
	}
}

// A chart whose crds/ holds something other than a CRD is refused at
// plan, naming the file and the object: Helm would create it outside the
// release and never update or delete it.
func TestCRDsFolderHoldsOnlyCRDs(t *testing.T) {
	f := newWidgets(t)
	testtools.WriteFiles(t, f.c.Spec.Dir, map[string]string{
		"charts/demo/crds/extra.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: sneaky}\n",
	})
	_, err := f.r.Plan(t.Context(), f.c, f.kubeInputs(), runner.PlanOptions{})
	if err == nil || !strings.Contains(err.Error(), "crds/extra.yaml holds ConfigMap/sneaky") || !strings.Contains(err.Error(), "move it to templates/") {
		t.Fatalf("plan err = %v, want the ConfigMap in crds/ named", err)
	}
	if crdExists(t, f.cl, widgetsCRD) != nil {
		t.Error("the refused plan created a CRD")
	}
}

// With chart.skipCRDs the crds/ folder is left alone, as helm install
// --skip-crds: the custom resource's kind must be served already.
func TestCRDsFolderSkipped(t *testing.T) {
	f := newWidgets(t)
	f.c.Def.Chart.SkipCRDs = true
	testtools.WriteFiles(t, f.c.Spec.Dir, map[string]string{ // unguarded, so it is rendered
		"charts/demo/templates/widget.yaml": "apiVersion: crds.knit.test/v1\nkind: Widget\nmetadata: {name: demo}\n",
	})
	_, err := f.r.Plan(t.Context(), f.c, f.kubeInputs(), runner.PlanOptions{})
	if err == nil || !strings.Contains(err.Error(), "Widget crds.knit.test/v1 is not served by this cluster") {
		t.Fatalf("plan err = %v, want the Widget's kind not served", err)
	}
	f.c.Def.Chart.SkipCRDs = false
	if got := kubetest.Summary(f.plan(f.kubeInputs(), runner.PlanOptions{})); !slices.Contains(got, "create CustomResourceDefinition/"+widgetsCRD) {
		t.Errorf("plan without skipCRDs %q does not create the CRD", got)
	}
}

// A crds/ CRD the cluster never establishes (its kind is claimed by
// another CRD of its group) fails the apply at once with the server's
// reason; the CRD it created is removed and no release is installed.
func TestCRDsFolderNeverEstablished(t *testing.T) {
	f := newWidgets(t)
	const rival = "cogs.crds.knit.test"
	removeCRDs(t, f.cl, rival)
	t.Cleanup(func() { removeCRDs(t, f.cl, rival) })
	objs, err := kube.Decode([]byte(`apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: `+rival+`}
spec:
  group: crds.knit.test
  names: {kind: Widget, listKind: WidgetList, plural: cogs, singular: cog}
  scope: Namespaced
  versions: [{name: v1, served: true, storage: true, schema: {openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}}}]
`), "rival")
	if err != nil {
		t.Fatal(err)
	}
	kc, err := kube.NewClient(f.cl.Config)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := kc.Apply(t.Context(), objs[0], false); err != nil {
		t.Fatal(err)
	}
	if err := kc.WaitEstablished(t.Context(), []string{rival}, time.Minute); err != nil {
		t.Fatal(err)
	}
	p, err := f.r.Plan(t.Context(), f.c, f.kubeInputs(), runner.PlanOptions{})
	if err != nil {
		t.Fatal(err)
	}
	_, err = f.r.Apply(t.Context(), f.c, p)
	if err == nil || !strings.Contains(err.Error(), "CustomResourceDefinition/"+widgetsCRD) || !strings.Contains(err.Error(), "NamesAccepted False") {
		t.Fatalf("apply err = %v, want the CRD and the server's reason", err)
	}
	if !strings.Contains(err.Error(), "the CRDs this apply created were removed") {
		t.Errorf("apply err = %v does not say the CRDs were removed", err)
	}
	eventually(t, "the refused CRD removed", func() bool { return crdExists(t, f.cl, widgetsCRD) == nil })
	if _, err := f.cl.Client.CoreV1().Namespaces().Get(t.Context(), f.ns, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("namespace %s after the failed apply: %v", f.ns, err)
	}
}

// An apply killed after it created the crds/ CRDs and before the install
// leaves the CRDs: applying the plan made before it (which creates them)
// installs the release.
func TestCRDsFolderAfterAKilledApply(t *testing.T) {
	f := newWidgets(t)
	p := f.plan(f.kubeInputs(), runner.PlanOptions{})
	data, err := os.ReadFile(filepath.Join(f.c.Spec.Dir, "charts", "demo", "crds", "widgets.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	objs, err := kube.Decode(data, "widgets.yaml")
	if err != nil {
		t.Fatal(err)
	}
	kc, err := kube.NewClient(f.cl.Config)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := kc.Apply(t.Context(), objs[0], false); err != nil { // what the killed apply did
		t.Fatal(err)
	}
	if _, err := f.r.Apply(t.Context(), f.c, p); err != nil {
		t.Fatalf("apply: %v", err)
	}
	if live, err := kc.Get(t.Context(), kube.Ref{APIVersion: "crds.knit.test/v1", Kind: "Widget", Namespace: f.ns, Name: "demo"}); err != nil || live == nil {
		t.Errorf("Widget after the apply: %v %v", live, err)
	}
	if again := f.plan(f.kubeInputs(), runner.PlanOptions{}); again.HasChanges() {
		t.Errorf("plan after the apply: %q", kubetest.Summary(again))
	}
}
