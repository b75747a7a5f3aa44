package helm

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"knit.dev/knit/internal/kubetest"
	"knit.dev/knit/internal/runner"
	"knit.dev/knit/internal/spec"
	"knit.dev/knit/internal/testtools"
)

func TestMain(m *testing.M) { kubetest.Main(m) }

var chartFiles = map[string]string{
	"charts/web/Chart.yaml":  "apiVersion: v2\nname: web\nversion: 0.1.0\n",
	"charts/web/values.yaml": "greeting: hello\nport: 80\ndb: {password: \"\"}\n",
	"charts/web/templates/cm.yaml": `apiVersion: v1
kind: ConfigMap
metadata: {name: {{ .Release.Name }}-settings}
data:
  greeting: {{ .Values.greeting | quote }}
`,
	"charts/web/templates/secret.yaml": `apiVersion: v1
kind: Secret
metadata: {name: {{ .Release.Name }}-db}
stringData: {password: {{ .Values.db.password | quote }}}
`,
	"charts/web/templates/svc.yaml": `apiVersion: v1
kind: Service
metadata: {name: {{ .Release.Name }}}
spec:
  ports: [{port: {{ .Values.port }}}]
  selector: {app: web}
`,
}

type fixture struct {
	t   *testing.T
	cl  *kubetest.Cluster
	r   *Runner
	c   runner.Component
	ns  string
	log *bytes.Buffer
}

func newFixture(t *testing.T) *fixture {
	cl := kubetest.Start(t)
	dir := t.TempDir()
	testtools.WriteFiles(t, dir, chartFiles)
	ns := cl.Namespace(t) + "-rel"
	env := &spec.Environment{Dir: dir, Spec: spec.EnvSpec{TeamName: "t", EnvName: "e"}}
	def := &spec.Component{Name: "web", Type: spec.TypeHelm,
		Chart:      &spec.Chart{Path: "./charts/web", Namespace: ns, Values: map[string]any{"port": int64(8080)}},
		Kubeconfig: &spec.Kubeconfig{ValueFrom: "cluster.kubeconfig"},
		Variables:  []spec.Variable{{Name: "greeting"}, {Name: "db.password"}},
		Outputs:    []spec.Output{{Name: "revision"}, {Name: "ip", From: "Service/web:.spec.clusterIP"}},
	}
	env.Spec.Components = []*spec.Component{def}
	log := &bytes.Buffer{}
	return &fixture{t: t, cl: cl, r: New(Options{DataDir: t.TempDir()}), ns: ns, log: log,
		c: runner.Component{Env: "t/e", Spec: env, Def: def, WorkDir: t.TempDir(), Log: log}}
}

func (f *fixture) inputs(greeting string) runner.Inputs {
	return runner.Inputs{"greeting": greeting, "db.password": "pw-from-terraform", spec.InputKubeconfig: string(f.cl.Kubeconfig)}
}

func (f *fixture) plan(in runner.Inputs, opts runner.PlanOptions) *runner.Plan {
	f.t.Helper()
	p, err := f.r.Plan(context.Background(), f.c, in, opts)
	if err != nil {
		f.t.Fatalf("plan: %v", err)
	}
	return p
}

func (f *fixture) apply(in runner.Inputs) runner.Outputs {
	f.t.Helper()
	outs, err := f.r.Apply(context.Background(), f.c, f.plan(in, runner.PlanOptions{}))
	if err != nil {
		f.t.Fatalf("apply: %v", err)
	}
	return outs
}

func TestInstallPlanDriftUpgradeUninstall(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	ns := f.ns
	kubetest.Want(t, "install plan", kubetest.Summary(f.plan(f.inputs("hi"), runner.PlanOptions{})), []string{
		"create Namespace/" + ns, "create Secret/" + ns + "/web-db", "create ConfigMap/" + ns + "/web-settings", "create Service/" + ns + "/web",
	})
	outs := f.apply(f.inputs("hi"))
	if outs["revision"].Value != int64(1) || outs["status"].Value != "deployed" || outs["ip"].Value == nil {
		t.Errorf("outputs = %v", outs)
	}
	cm, err := f.cl.Client.CoreV1().ConfigMaps(ns).Get(ctx, "web-settings", metav1.GetOptions{})
	if err != nil || cm.Data["greeting"] != "hi" {
		t.Fatalf("configmap: %v %v", cm, err)
	}
	svc, _ := f.cl.Client.CoreV1().Services(ns).Get(ctx, "web", metav1.GetOptions{})
	if svc.Spec.Ports[0].Port != 8080 {
		t.Errorf("service port = %d, want chart.values port 8080", svc.Spec.Ports[0].Port)
	}
	if p := f.plan(f.inputs("hi"), runner.PlanOptions{}); p.HasChanges() {
		t.Errorf("plan after install: %v", kubetest.Summary(p))
	}

	// A values change is an object diff, old → new; a Secret's values are masked.
	// The release's own values are shown too, a sensitive variable's masked.
	changed := f.inputs("hello")
	changed["db.password"] = "pw-rotated"
	f.c.Sensitive = map[string]bool{"db.password": true}
	p := f.plan(changed, runner.PlanOptions{})
	f.c.Sensitive = nil
	kubetest.Want(t, "values change", kubetest.Summary(p), []string{
		"update Release/" + ns + "/web db.password,greeting",
		"update Secret/" + ns + "/web-db data.password", "update ConfigMap/" + ns + "/web-settings data.greeting",
	})
	kubetest.Want(t, "values change, old → new", changes(p), []string{
		"db.password: (sensitive) → (sensitive)", "greeting: hi → hello",
		"data.password: (sensitive) → (sensitive)", "data.greeting: hi → hello",
	})

	// Drift: edited and deleted out of band; a field of another manager is not drift.
	f.cl.Client.CoreV1().ConfigMaps(ns).Patch(ctx, "web-settings", types.MergePatchType,
		[]byte(`{"data":{"greeting":"edited"},"metadata":{"annotations":{"owner":"ops"}}}`), metav1.PatchOptions{FieldManager: "kubectl-edit"})
	if err := f.cl.Client.CoreV1().Services(ns).Delete(ctx, "web", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	kubetest.Want(t, "drift", kubetest.Summary(f.plan(f.inputs("hi"), runner.PlanOptions{})), []string{
		"update ConfigMap/" + ns + "/web-settings data.greeting", "create Service/" + ns + "/web",
	})
	outs = f.apply(f.inputs("hi"))
	if p := f.plan(f.inputs("hi"), runner.PlanOptions{}); p.HasChanges() {
		t.Errorf("reconcile left changes: %v", kubetest.Summary(p))
	}
	if outs["revision"].Value != int64(2) {
		t.Errorf("revision after reconcile = %v", outs["revision"].Value)
	}

	// Uninstall.
	kubetest.Want(t, "destroy plan", kubetest.Summary(f.plan(f.inputs("hi"), runner.PlanOptions{Destroy: true})), []string{
		"delete Service/" + ns + "/web", "delete ConfigMap/" + ns + "/web-settings", "delete Secret/" + ns + "/web-db",
		"delete Namespace/" + ns,
	})
	if err := f.r.Destroy(ctx, f.c, f.inputs("hi")); err != nil {
		t.Fatal(err)
	}
	// knit created the namespace for the release: teardown removed it, and waited until it was gone.
	if _, err := f.cl.Client.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("namespace %s after teardown: %v", ns, err)
	}
	if _, err := f.cl.Client.CoreV1().ConfigMaps(ns).Get(ctx, "web-settings", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("configmap after uninstall: %v", err)
	}
	filepath.WalkDir(f.c.WorkDir, func(p string, d os.DirEntry, err error) error {
		if b, _ := os.ReadFile(p); bytes.Contains(b, []byte("pw-from-terraform")) || bytes.Contains(b, []byte(f.cl.Token)) {
			t.Errorf("%s holds a secret in clear", p)
		}
		return nil
	})
}

// changes lists a plan's value changes as "path: old → new".
func changes(p *runner.Plan) []string {
	var out []string
	for _, r := range p.Resources {
		for _, c := range r.Changes {
			out = append(out, c.String())
		}
	}
	return out
}

func TestFailedInstallIsRolledBack(t *testing.T) {
	f := newFixture(t)
	f.c.Def.Chart.Values["port"] = int64(99999) // the API server refuses the Service
	_, err := f.r.Apply(context.Background(), f.c, f.plan(f.inputs("hi"), runner.PlanOptions{}))
	if err == nil || !strings.Contains(err.Error(), "spec.ports[0].port: Invalid value: 99999") || !strings.Contains(err.Error(), "rolled back") {
		t.Fatalf("err = %v", err)
	}
	if _, err := f.cl.Client.CoreV1().ConfigMaps(f.ns).Get(context.Background(), "web-settings", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("the failed install left web-settings behind: %v", err)
	}
	// Fixed, it installs.
	f.c.Def.Chart.Values["port"] = int64(80)
	if outs := f.apply(f.inputs("hi")); outs["status"].Value != "deployed" {
		t.Errorf("outputs = %v", outs)
	}
}

// A symlink in a local chart that leads out of the environment's folder is
// refused: Helm's loader would follow it.
func TestSymlinkOutOfTheEnvironmentIsRefused(t *testing.T) {
	dir, outside := t.TempDir(), t.TempDir()
	testtools.WriteFiles(t, dir, chartFiles)
	testtools.WriteFiles(t, outside, map[string]string{"secret.yaml": "kind: Secret\n"})
	if err := os.Symlink(filepath.Join(outside, "secret.yaml"), filepath.Join(dir, "charts/web/templates/stolen.yaml")); err != nil {
		t.Fatal(err)
	}
	env := &spec.Environment{Dir: dir, Spec: spec.EnvSpec{TeamName: "t", EnvName: "e"}}
	def := &spec.Component{Name: "web", Type: spec.TypeHelm, Chart: &spec.Chart{Path: "./charts/web"}}
	env.Spec.Components = []*spec.Component{def}
	c := runner.Component{Env: "t/e", Spec: env, Def: def, WorkDir: t.TempDir(), Log: &bytes.Buffer{}}
	_, err := New(Options{DataDir: t.TempDir()}).Fingerprint(context.Background(), c, runner.Inputs{})
	if err == nil || !strings.Contains(err.Error(), "templates/stolen.yaml is a symlink to ") {
		t.Errorf("err = %v", err)
	}
}

// chart.maxHistory bounds the release records Helm keeps (default 10).
func TestMaxHistoryBoundsReleaseRecords(t *testing.T) {
	f := newFixture(t)
	f.c.Def.Chart.MaxHistory = 2
	for _, g := range []string{"a", "b", "c", "d"} {
		f.apply(f.inputs(g))
	}
	l, err := f.cl.Client.CoreV1().Secrets(f.ns).List(context.Background(), metav1.ListOptions{LabelSelector: "owner=helm,name=web"})
	if err != nil || len(l.Items) != 2 {
		t.Errorf("%d release records (%v), want 2", len(l.Items), err)
	}
	def := *f.c.Def
	def.Chart = &spec.Chart{Path: "./charts/web"}
	c := f.c
	c.Def = &def
	rel, err := f.r.connect(context.Background(), c, f.inputs("a"))
	if err != nil || rel.maxHistory != 10 {
		t.Errorf("default maxHistory %d (%v), want 10", rel.maxHistory, err)
	}
}

// The CRDs of a chart's crds/ folder are planned at the first install, and
// an upgrade's plan says Helm will not touch them.
func TestCRDsFolderIsPlanned(t *testing.T) {
	f := newFixture(t)
	testtools.WriteFiles(t, f.c.Spec.Dir, map[string]string{"charts/web/crds/widgets.yaml": `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: widgets.knit.test}
spec:
  group: knit.test
  scope: Namespaced
  names: {kind: Widget, plural: widgets, singular: widget, listKind: WidgetList}
  versions:
    - name: v1
      served: true
      storage: true
      schema: {openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}}
`})
	p := f.plan(f.inputs("hi"), runner.PlanOptions{})
	if got := kubetest.Summary(p); len(got) < 2 || got[1] != "create CustomResourceDefinition/widgets.knit.test" {
		t.Errorf("install plan %q does not create the CRD after the namespace", got)
	}
	f.apply(f.inputs("hi"))
	p = f.plan(f.inputs("hello"), runner.PlanOptions{})
	if !strings.Contains(strings.Join(p.Notes, "\n"), "crds/ folder at the first install only") {
		t.Errorf("upgrade plan notes %q do not say Helm leaves crds/ alone", p.Notes)
	}
}

// Teardown waits for the namespace it deletes, at most chart.timeout, and
// then names what is still terminating. (A finalizer nobody removes keeps
// the namespace forever, so the short timeout always expires.)
func TestTeardownTimeoutNamesWhatIsStillTerminating(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	f.apply(f.inputs("hi"))
	hold := []byte(`{"metadata":{"finalizers":["knit.test/hold"]}}`)
	if _, err := f.cl.Client.CoreV1().Namespaces().Patch(ctx, f.ns, types.MergePatchType, hold, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	defer f.cl.Client.CoreV1().Namespaces().Patch(ctx, f.ns, types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{})
	f.c.Def.Chart.Timeout = "2s"
	err := f.r.Destroy(ctx, f.c, f.inputs("hi"))
	if want := "still terminating after 2s: Namespace/" + f.ns + " (finalizers: knit.test/hold"; err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("err = %v, want it to contain %q", err, want)
	}
}

// A chart with a kind at an API version the cluster no longer serves fails
// the plan, for an install and an upgrade alike, naming the object and the
// version the cluster serves, and nothing is created.
func TestARemovedAPIVersionInAChartFailsThePlan(t *testing.T) {
	f := newFixture(t)
	f.apply(f.inputs("hi"))
	testtools.WriteFiles(t, f.c.Spec.Dir, map[string]string{"charts/web/templates/role.yaml": `apiVersion: rbac.authorization.k8s.io/v1beta1
kind: ClusterRole
metadata: {name: {{ .Release.Name }}-{{ .Release.Namespace }}-reader}
rules: [{apiGroups: [""], resources: [pods], verbs: [get]}]
`})
	want := "ClusterRole rbac.authorization.k8s.io/v1beta1 is not served by this cluster; it serves rbac.authorization.k8s.io/v1"
	if _, err := f.r.Plan(context.Background(), f.c, f.inputs("hi"), runner.PlanOptions{}); err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("upgrade plan: err = %v, want %q", err, want)
	}
	f.c.Def.Chart.Release, f.c.WorkDir = "fresh", t.TempDir()
	if _, err := f.r.Plan(context.Background(), f.c, f.inputs("hi"), runner.PlanOptions{}); err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "ClusterRole/fresh-") {
		t.Fatalf("install plan: err = %v, want the object and %q", err, want)
	}
	if _, err := f.cl.Client.CoreV1().ConfigMaps(f.ns).Get(context.Background(), "fresh-settings", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("a failed plan created fresh-settings: %v", err)
	}
}
