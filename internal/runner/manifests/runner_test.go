package manifests

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"knit.dev/knit/internal/kubetest"
	"knit.dev/knit/internal/runner"
	"knit.dev/knit/internal/spec"
	"knit.dev/knit/internal/testtools"
)

func TestMain(m *testing.M) { kubetest.Main(m) }

// fixture is a manifests component in a fresh environment folder, reaching
// the test cluster through a kubeconfig file.
type fixture struct {
	t   *testing.T
	cl  *kubetest.Cluster
	r   *Runner
	c   runner.Component
	dir string
	ns  string
	log *bytes.Buffer
}

func newFixture(t *testing.T, files map[string]string) *fixture {
	cl := kubetest.Start(t)
	dir := t.TempDir()
	testtools.WriteFiles(t, dir, files)
	kc := filepath.Join(dir, "kubeconfig")
	if err := os.WriteFile(kc, cl.Kubeconfig, 0o600); err != nil {
		t.Fatal(err)
	}
	ns := cl.Namespace(t) + "-app" // not created: the runner creates it
	env := &spec.Environment{Dir: dir, Spec: spec.EnvSpec{TeamName: "t", EnvName: "e"}}
	def := &spec.Component{Name: "config", Type: spec.TypeManifests,
		Manifests:  &spec.Manifests{Path: "./k8s", Namespace: ns},
		Kubeconfig: &spec.Kubeconfig{Path: "./kubeconfig"},
		Outputs:    []spec.Output{{Name: "greeting", From: "ConfigMap/settings:.data.greeting"}},
	}
	env.Spec.Components = []*spec.Component{def}
	log := &bytes.Buffer{}
	work := t.TempDir()
	return &fixture{t: t, cl: cl, r: New(Options{DataDir: t.TempDir()}), dir: dir, ns: ns, log: log,
		c: runner.Component{Env: "t/e", Spec: env, Def: def, WorkDir: work, Log: log}}
}

// write replaces one file of the environment's folder.
func (f *fixture) write(name, content string) {
	f.t.Helper()
	testtools.WriteFiles(f.t, f.dir, map[string]string{name: content})
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

const files = `
apiVersion: v1
kind: ConfigMap
metadata: {name: settings}
data:
  greeting: "hello ${var.who}"
  replicas: "${var.replicas}"
---
apiVersion: v1
kind: Secret
metadata: {name: creds}
stringData: {password: "${var.password}"}
`

func TestPlanApplyDriftPruneDestroy(t *testing.T) {
	f := newFixture(t, map[string]string{
		"k8s/app.yaml":   files,
		"k8s/extra.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: extra}\ndata: {a: b}\n",
	})
	ctx := context.Background()
	in := runner.Inputs{"who": "world", "replicas": int64(3), "password": "s3cret-from-terraform"}
	ns := f.ns

	p := f.plan(in, runner.PlanOptions{})
	kubetest.Want(t, "first plan", kubetest.Summary(p), []string{
		"create Namespace/" + ns, "create Secret/" + ns + "/creds",
		"create ConfigMap/" + ns + "/extra", "create ConfigMap/" + ns + "/settings",
	})
	if b, _ := os.ReadFile(p.File); bytes.Contains(b, []byte("s3cret-from-terraform")) {
		t.Error("the plan file holds a sensitive input in clear")
	}
	outs, err := f.r.Apply(ctx, f.c, p)
	if err != nil {
		t.Fatal(err)
	}
	if outs["greeting"].Value != "hello world" {
		t.Errorf("outputs = %v", outs)
	}
	cm, err := f.cl.Client.CoreV1().ConfigMaps(ns).Get(ctx, "settings", metav1.GetOptions{})
	if err != nil || cm.Data["replicas"] != "3" {
		t.Fatalf("settings = %v, %v", cm, err)
	}
	if got := f.plan(in, runner.PlanOptions{}); got.HasChanges() {
		t.Errorf("plan after apply has changes: %v", kubetest.Summary(got))
	}

	// Another manager's field is not drift; an edited field and a deleted object are.
	_, err = f.cl.Client.CoreV1().ConfigMaps(ns).Patch(ctx, "settings", types.MergePatchType,
		[]byte(`{"metadata":{"labels":{"team":"ops"}}}`), metav1.PatchOptions{FieldManager: "kubectl-label"})
	if err != nil {
		t.Fatal(err)
	}
	if got := f.plan(in, runner.PlanOptions{}); got.HasChanges() {
		t.Errorf("a label added by another manager is drift: %v", kubetest.Summary(got))
	}
	_, err = f.cl.Client.CoreV1().ConfigMaps(ns).Patch(ctx, "settings", types.MergePatchType,
		[]byte(`{"data":{"greeting":"edited"}}`), metav1.PatchOptions{FieldManager: "kubectl-edit"})
	if err != nil {
		t.Fatal(err)
	}
	if err := f.cl.Client.CoreV1().ConfigMaps(ns).Delete(ctx, "extra", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	kubetest.Want(t, "drift", kubetest.Summary(f.plan(in, runner.PlanOptions{})), []string{
		"create ConfigMap/" + ns + "/extra", "update ConfigMap/" + ns + "/settings data.greeting",
	})
	f.apply(in)
	if got := f.plan(in, runner.PlanOptions{}); got.HasChanges() {
		t.Errorf("reconcile left changes: %v", kubetest.Summary(got))
	}

	// An object removed from the files is pruned.
	if err := os.Remove(filepath.Join(f.dir, "k8s/extra.yaml")); err != nil {
		t.Fatal(err)
	}
	kubetest.Want(t, "prune plan", kubetest.Summary(f.plan(in, runner.PlanOptions{})), []string{"delete ConfigMap/" + ns + "/extra"})
	f.apply(in)
	if _, err := f.cl.Client.CoreV1().ConfigMaps(ns).Get(ctx, "extra", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("extra after prune: %v", err)
	}

	// Destroy: everything, the namespace last.
	kubetest.Want(t, "destroy plan", kubetest.Summary(f.plan(in, runner.PlanOptions{Destroy: true})), []string{
		"delete ConfigMap/" + ns + "/settings", "delete Secret/" + ns + "/creds", "delete Namespace/" + ns,
	})
	f.log.Reset()
	if err := f.r.Destroy(ctx, f.c, in); err != nil {
		t.Fatal(err)
	}
	kubetest.Want(t, "destroy log", strings.Split(strings.TrimSpace(f.log.String()), "\n"), []string{
		"deleted ConfigMap/" + ns + "/settings", "deleted Secret/" + ns + "/creds", "deleted Namespace/" + ns,
	})
	filepath.WalkDir(f.c.WorkDir, func(p string, d os.DirEntry, err error) error {
		if b, _ := os.ReadFile(p); bytes.Contains(b, []byte("s3cret-from-terraform")) {
			t.Errorf("%s holds a sensitive input in clear", p)
		}
		return nil
	})
}

const crd = `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: widgets.example.com}
spec:
  group: example.com
  scope: Namespaced
  names: {plural: widgets, singular: widget, kind: Widget}
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        x-kubernetes-preserve-unknown-fields: true
`

func TestKustomizeCRDsAndDestroyOrder(t *testing.T) {
	f := newFixture(t, map[string]string{
		"k8s/kustomization.yaml": "resources: [crd.yaml, widget.yaml]\nlabels: [{pairs: {app: shop}}]\n",
		"k8s/crd.yaml":           crd,
		"k8s/widget.yaml":        "apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w1}\nspec: {size: \"${var.size}\"}\n",
	})
	f.c.Def.Outputs = nil
	ctx := context.Background()
	in := runner.Inputs{"size": "large"}
	kubetest.Want(t, "plan", kubetest.Summary(f.plan(in, runner.PlanOptions{})), []string{
		"create Namespace/" + f.ns, "create CustomResourceDefinition/widgets.example.com", "create Widget/" + f.ns + "/w1",
	})
	f.apply(in)
	if got := f.plan(in, runner.PlanOptions{}); got.HasChanges() {
		t.Errorf("plan after apply: %v", kubetest.Summary(got))
	}
	f.log.Reset()
	if err := f.r.Destroy(ctx, f.c, in); err != nil {
		t.Fatal(err)
	}
	kubetest.Want(t, "destroy order", strings.Split(strings.TrimSpace(f.log.String()), "\n"), []string{
		"deleted Widget/" + f.ns + "/w1", "deleted CustomResourceDefinition/widgets.example.com", "deleted Namespace/" + f.ns,
	})
}

func TestUnknownVariable(t *testing.T) {
	f := newFixture(t, map[string]string{"k8s/a.yaml": files})
	_, err := f.r.Plan(context.Background(), f.c, runner.Inputs{"who": "x"}, runner.PlanOptions{})
	if err == nil || !strings.Contains(err.Error(), `${var.replicas}: no variable "replicas"`) {
		t.Errorf("err = %v", err)
	}
}

func TestKubeconfigFromInputStaysInMemory(t *testing.T) {
	f := newFixture(t, map[string]string{"k8s/a.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: settings}\ndata: {greeting: hi}\n"})
	f.c.Def.Kubeconfig = &spec.Kubeconfig{ValueFrom: "cluster.kubeconfig"}
	in := runner.Inputs{spec.InputKubeconfig: string(f.cl.Kubeconfig)}
	outs := f.apply(in)
	if outs["greeting"].Value != "hi" {
		t.Errorf("outputs = %v", outs)
	}
	f.c.Def.Kubeconfig = &spec.Kubeconfig{Server: &spec.KubeValue{Value: f.cl.Server},
		CA: &spec.KubeValue{ValueFrom: "cluster.ca"}, Token: &spec.KubeValue{ValueFrom: "cluster.token"}}
	in = runner.Inputs{spec.InputKubeconfigCA: string(f.cl.CA), spec.InputKubeconfigToken: f.cl.Token}
	if p := f.plan(in, runner.PlanOptions{}); p.HasChanges() {
		t.Errorf("plan with server+ca+token: %v", kubetest.Summary(p))
	}
	filepath.WalkDir(f.c.WorkDir, func(p string, d os.DirEntry, err error) error {
		if b, _ := os.ReadFile(p); bytes.Contains(b, []byte(f.cl.Token)) {
			t.Errorf("%s holds the token in clear", p)
		}
		return nil
	})
}

// A symlink in the manifests folder that leads out of the environment's
// folder is refused before any file is read through it.
func TestSymlinkOutOfTheEnvironmentIsRefused(t *testing.T) {
	dir, outside := t.TempDir(), t.TempDir()
	testtools.WriteFiles(t, dir, map[string]string{"k8s/a.yaml": files})
	testtools.WriteFiles(t, outside, map[string]string{"stolen.yaml": files})
	if err := os.Symlink(filepath.Join(outside, "stolen.yaml"), filepath.Join(dir, "k8s/b.yaml")); err != nil {
		t.Fatal(err)
	}
	env := &spec.Environment{Dir: dir, Spec: spec.EnvSpec{TeamName: "t", EnvName: "e"}}
	def := &spec.Component{Name: "config", Type: spec.TypeManifests, Manifests: &spec.Manifests{Path: "./k8s"}}
	env.Spec.Components = []*spec.Component{def}
	c := runner.Component{Env: "t/e", Spec: env, Def: def, WorkDir: t.TempDir(), Log: &bytes.Buffer{}}
	_, err := New(Options{DataDir: t.TempDir()}).Fingerprint(context.Background(), c, runner.Inputs{"who": "x", "replicas": 1, "password": "p"})
	if err == nil || !strings.Contains(err.Error(), "k8s/b.yaml is a symlink to ") || !strings.Contains(err.Error(), "outside the environment's folder") {
		t.Errorf("err = %v", err)
	}
}

// A kind at an API version the cluster no longer serves fails the plan,
// naming the object (cluster-scoped: no namespace given to it) and the
// version the cluster serves; nothing is created, not even the namespace.
func TestARemovedAPIVersionFailsThePlanNamingTheServedVersion(t *testing.T) {
	f := newFixture(t, map[string]string{
		"k8s/rbac.yaml": `apiVersion: rbac.authorization.k8s.io/v1beta1
kind: ClusterRole
metadata: {name: knit-reader}
rules: [{apiGroups: [""], resources: [pods], verbs: [get]}]
`,
		"k8s/settings.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: settings}\ndata: {greeting: hi}\n",
	})
	_, err := f.r.Plan(context.Background(), f.c, runner.Inputs{}, runner.PlanOptions{})
	const want = "ClusterRole/knit-reader: ClusterRole rbac.authorization.k8s.io/v1beta1 is not served by this cluster; it serves rbac.authorization.k8s.io/v1"
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("plan: %v\nwant an error saying %q", err, want)
	}
	// A kind no CRD defines is named too.
	f.write("k8s/rbac.yaml", "apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w}\n")
	_, err = f.r.Plan(context.Background(), f.c, runner.Inputs{}, runner.PlanOptions{})
	if err == nil || !strings.Contains(err.Error(), "Widget/w: Widget example.com/v1 is not served by this cluster: apply the CustomResourceDefinition") {
		t.Fatalf("plan with an unknown kind: %v", err)
	}
	ctx := context.Background()
	if _, err := f.cl.Client.CoreV1().Namespaces().Get(ctx, f.ns, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("namespace %s after the failed plans: %v", f.ns, err)
	}
	if _, err := f.cl.Client.RbacV1().ClusterRoles().Get(ctx, "knit-reader", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("ClusterRole knit-reader after the failed plans: %v", err)
	}
}

// An object admission would refuse fails the plan, new objects too: every
// object is dry-run applied. The policy is a ValidatingAdmissionPolicy
// bound to this test's namespace only (the API server is shared).
func TestAnObjectAdmissionRejectsFailsThePlan(t *testing.T) {
	f := newFixture(t, map[string]string{
		"k8s/settings.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: settings}\ndata: {greeting: hi}\n",
		"k8s/bad.yaml":      "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: bad}\ndata: {forbidden: \"yes\"}\n",
	})
	ctx := context.Background()
	_, err := f.cl.Client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: f.ns}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	denyForbiddenKey(t, f.cl, f.ns)
	_, err = f.r.Plan(ctx, f.c, runner.Inputs{}, runner.PlanOptions{})
	if err == nil || !strings.Contains(err.Error(), "ConfigMap/"+f.ns+"/bad") || !strings.Contains(err.Error(), "may not hold a forbidden key") {
		t.Fatalf("plan: %v\nwant the policy's refusal of ConfigMap/%s/bad", err, f.ns)
	}
	if _, err := f.cl.Client.CoreV1().ConfigMaps(f.ns).Get(ctx, "settings", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("settings after the failed plan: %v", err)
	}
}

// denyForbiddenKey makes the API server refuse, in namespace ns, any
// ConfigMap with a "forbidden" key, and waits until it does.
func denyForbiddenKey(t *testing.T, cl *kubetest.Cluster, ns string) {
	t.Helper()
	ctx := context.Background()
	fail := admissionv1.Fail
	policy := &admissionv1.ValidatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "no-forbidden-" + ns},
		Spec: admissionv1.ValidatingAdmissionPolicySpec{
			FailurePolicy: &fail,
			MatchConstraints: &admissionv1.MatchResources{ResourceRules: []admissionv1.NamedRuleWithOperations{{
				RuleWithOperations: admissionv1.RuleWithOperations{
					Operations: []admissionv1.OperationType{admissionv1.Create, admissionv1.Update},
					Rule:       admissionv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"configmaps"}},
				},
			}}},
			Validations: []admissionv1.Validation{{
				Expression: "!has(object.data) || !('forbidden' in object.data)",
				Message:    "a ConfigMap may not hold a forbidden key",
			}},
		},
	}
	if _, err := cl.Client.AdmissionregistrationV1().ValidatingAdmissionPolicies().Create(ctx, policy, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	binding := &admissionv1.ValidatingAdmissionPolicyBinding{
		ObjectMeta: metav1.ObjectMeta{Name: policy.Name},
		Spec: admissionv1.ValidatingAdmissionPolicyBindingSpec{
			PolicyName:        policy.Name,
			ValidationActions: []admissionv1.ValidationAction{admissionv1.Deny},
			MatchResources: &admissionv1.MatchResources{NamespaceSelector: &metav1.LabelSelector{
				MatchLabels: map[string]string{"kubernetes.io/metadata.name": ns},
			}},
		},
	}
	if _, err := cl.Client.AdmissionregistrationV1().ValidatingAdmissionPolicyBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// The API server loads policies in the background: wait until a dry
	// run is refused (the deadline only guards against a hang).
	probe := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "probe"}, Data: map[string]string{"forbidden": "x"}}
	for deadline := time.Now().Add(2 * time.Minute); ; {
		_, err := cl.Client.CoreV1().ConfigMaps(ns).Create(ctx, probe, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		if err != nil && strings.Contains(err.Error(), "forbidden key") {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the policy never took effect: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
