package manifests

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
