package helm

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"knit.dev/knit/internal/kube"
	"knit.dev/knit/internal/kubetest"
	"knit.dev/knit/internal/runner"
	"knit.dev/knit/internal/spec"
	"knit.dev/knit/internal/testtools"
)

// The podinfo chart in testdata/podinfo is real-world content (see its
// ORIGIN.md): hooks, helm tests, a ServiceMonitor.

// newPodinfo returns a fixture for podinfo's chart, released as "podinfo"
// into a namespace that does not exist yet (knit creates it).
func newPodinfo(t *testing.T, values map[string]any) *fixture {
	cl := kubetest.Start(t)
	dir := t.TempDir()
	src := filepath.Join(testtools.ModuleRoot(t), "testdata", "podinfo", "podinfo")
	if err := os.CopyFS(filepath.Join(dir, "charts", "podinfo"), os.DirFS(src)); err != nil {
		t.Fatal(err)
	}
	ns := cl.Namespace(t)
	if err := cl.Client.CoreV1().Namespaces().Delete(context.Background(), ns, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	ns += "-pi" // a namespace nobody created yet
	if values == nil {
		values = map[string]any{}
	}
	env := &spec.Environment{Dir: dir, Spec: spec.EnvSpec{TeamName: "t", EnvName: "e"}}
	def := &spec.Component{Name: "podinfo", Type: spec.TypeHelm,
		Chart:      &spec.Chart{Path: "./charts/podinfo", Namespace: ns, Values: values},
		Kubeconfig: &spec.Kubeconfig{ValueFrom: "cluster.kubeconfig"},
	}
	env.Spec.Components = []*spec.Component{def}
	log := &bytes.Buffer{}
	return &fixture{t: t, cl: cl, r: New(Options{DataDir: t.TempDir()}), ns: ns, log: log,
		c: runner.Component{Env: "t/e", Spec: env, Def: def, WorkDir: t.TempDir(), Log: log}}
}

func (f *fixture) kubeInputs() runner.Inputs {
	return runner.Inputs{spec.InputKubeconfig: string(f.cl.Kubeconfig)}
}

// applyCRDs applies the prometheus-operator CRD bundle (1.3 MB) and waits
// until the API serves ServiceMonitors.
func applyCRDs(t *testing.T, cl *kubetest.Cluster) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(testtools.ModuleRoot(t), "testdata", "prometheus-operator", "crds.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if len(data) < 1<<20 {
		t.Fatalf("the CRD bundle has %d bytes, want at least 1 MB", len(data))
	}
	objs, err := kube.Decode(data, "crds.yaml")
	if err != nil {
		t.Fatal(err)
	}
	kc, err := kube.NewClient(cl.Config)
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range objs {
		if _, err := kc.Apply(context.Background(), o, false); err != nil {
			t.Fatal(err)
		}
	}
	eventually(t, "ServiceMonitors are served", func() bool {
		_, err := kc.Mapping(schema.GroupVersionKind{Group: "monitoring.coreos.com", Version: "v1", Kind: "ServiceMonitor"})
		return err == nil
	})
}

// eventually waits for cond; the deadline only guards against a hang.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("gave up waiting: %s", what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// A podinfo value change reads as old → new, list entries named by their
// merge key; the ServiceMonitor (a custom resource) makes the plan say
// what Helm's upgrade does not repair.
func TestPodinfoPlanShowsOldAndNewValues(t *testing.T) {
	f := newPodinfo(t, map[string]any{"serviceMonitor": map[string]any{"enabled": true}})
	applyCRDs(t, f.cl)
	f.apply(f.kubeInputs())
	if p := f.plan(f.kubeInputs(), runner.PlanOptions{}); p.HasChanges() {
		t.Fatalf("plan after install: %v", kubetest.Summary(p))
	}
	f.c.Def.Chart.Values["replicaCount"] = int64(3)
	f.c.Def.Chart.Values["ui"] = map[string]any{"color": "#ff0000"}
	p := f.plan(f.kubeInputs(), runner.PlanOptions{})
	kubetest.Want(t, "podinfo values change", changes(p), []string{
		"replicaCount: 1 → 3", "ui.color: #34577c → #ff0000",
		"spec.replicas: 1 → 3",
		"spec.template.spec.containers[podinfo].env[PODINFO_UI_COLOR]: #34577c → #ff0000",
	})
	if len(p.Notes) != 1 || !strings.Contains(p.Notes[0], "ServiceMonitor/"+f.ns+"/podinfo") {
		t.Errorf("notes %q do not name the ServiceMonitor Helm patches two-way", p.Notes)
	}
	f.apply(f.kubeInputs())
	if p := f.plan(f.kubeInputs(), runner.PlanOptions{}); p.HasChanges() {
		t.Errorf("plan after the upgrade: %v", kubetest.Summary(p))
	}
}

// A ConfigMap rendered with `data:` null and given a key out of band:
// Helm's upgrade removes the key, so the plan shows the removal, and the
// apply does what the plan showed.
func TestNullDataPlanMatchesHelmsApply(t *testing.T) {
	f := newFixture(t)
	testtools.WriteFiles(t, f.c.Spec.Dir, map[string]string{
		"charts/web/templates/cm-null.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: {{ .Release.Name }}-controller}\ndata:\n",
	})
	ctx := context.Background()
	f.apply(f.inputs("hi"))
	_, err := f.cl.Client.CoreV1().ConfigMaps(f.ns).Patch(ctx, "web-controller", types.MergePatchType,
		[]byte(`{"data":{"added-by-ops":"true"}}`), metav1.PatchOptions{FieldManager: "kubectl-edit"})
	if err != nil {
		t.Fatal(err)
	}
	p := f.plan(f.inputs("hi"), runner.PlanOptions{})
	kubetest.Want(t, "plan", kubetest.Summary(p), []string{"update ConfigMap/" + f.ns + "/web-controller data.added-by-ops"})
	kubetest.Want(t, "plan values", changes(p), []string{"data.added-by-ops: true → (none)"})
	if _, err := f.r.Apply(ctx, f.c, p); err != nil {
		t.Fatal(err)
	}
	cm, err := f.cl.Client.CoreV1().ConfigMaps(f.ns).Get(ctx, "web-controller", metav1.GetOptions{})
	if err != nil || len(cm.Data) != 0 {
		t.Errorf("after apply: %v %v, want the key removed as planned", cm.Data, err)
	}
	if p := f.plan(f.inputs("hi"), runner.PlanOptions{}); p.HasChanges() {
		t.Errorf("plan after apply: %v", kubetest.Summary(p))
	}
}

// failJob marks a Job failed through its status subresource, as the Job
// controller would (the test server runs no controllers).
func failJob(t *testing.T, f *fixture, name string) {
	t.Helper()
	ctx := context.Background()
	eventually(t, "Job "+name+" exists", func() bool {
		_, err := f.cl.Client.BatchV1().Jobs(f.ns).Get(ctx, name, metav1.GetOptions{})
		return err == nil
	})
	now := time.Now().UTC().Format(time.RFC3339)
	status := fmt.Sprintf(`{"status":{"startTime":%q,"failed":1,"conditions":[
		{"type":"FailureTarget","status":"True","reason":"BackoffLimitExceeded","message":"Job has reached the specified backoff limit","lastTransitionTime":%[1]q,"lastProbeTime":%[1]q},
		{"type":"Failed","status":"True","reason":"BackoffLimitExceeded","message":"Job has reached the specified backoff limit","lastTransitionTime":%[1]q,"lastProbeTime":%[1]q}]}}`, now)
	_, err := f.cl.Client.BatchV1().Jobs(f.ns).Patch(ctx, name, types.MergePatchType, []byte(status), metav1.PatchOptions{}, "status")
	if err != nil {
		t.Fatalf("fail Job %s: %v", name, err)
	}
}

// A pre-upgrade hook Job that fails: the error names it and its
// conditions, the upgrade is rolled back and the revision output is
// Helm's; teardown then leaves neither the failed hook Job nor the
// namespace knit created behind.
func TestFailedHookIsNamedAndTeardownLeavesNothing(t *testing.T) {
	f := newPodinfo(t, nil)
	ctx := context.Background()
	if outs := f.apply(f.kubeInputs()); outs["revision"].Value != int64(1) {
		t.Fatalf("outputs %v", outs)
	}
	f.c.Def.Chart.Values["knitTest"] = map[string]any{"hook": true}
	p := f.plan(f.kubeInputs(), runner.PlanOptions{})
	if !strings.Contains(strings.Join(p.Notes, "\n"), "pre-upgrade hook Job/"+f.ns+"/podinfo-migrate runs at apply") {
		t.Errorf("plan notes do not name the hook: %q", p.Notes)
	}
	errc := make(chan error, 1)
	go func() {
		_, err := f.r.Apply(ctx, f.c, p)
		errc <- err
	}()
	failJob(t, f, "podinfo-migrate")
	err := <-errc
	const want = "pre-install,pre-upgrade hook Job podinfo-migrate: failed: conditions FailureTarget=True BackoffLimitExceeded, Failed=True BackoffLimitExceeded"
	if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "now revision 3") {
		t.Fatalf("err = %v, want it to name %q and the rollback's revision", err, want)
	}
	outs, oerr := f.r.Outputs(ctx, f.c)
	if oerr != nil || fmt.Sprint(outs["revision"].Value) != "3" {
		t.Errorf("revision output after the rollback = %v (%v), want Helm's 3", outs["revision"].Value, oerr)
	}
	if _, err := f.cl.Client.BatchV1().Jobs(f.ns).Get(ctx, "podinfo-migrate", metav1.GetOptions{}); err != nil {
		t.Fatalf("the failed hook Job should survive the rollback until teardown: %v", err)
	}

	dp := f.plan(f.kubeInputs(), runner.PlanOptions{Destroy: true})
	for _, want := range []string{"delete Job/" + f.ns + "/podinfo-migrate", "delete Namespace/" + f.ns} {
		if !strings.Contains(strings.Join(kubetest.Summary(dp), "\n"), want) {
			t.Errorf("destroy plan lacks %q: %v", want, kubetest.Summary(dp))
		}
	}
	if err := f.r.Destroy(ctx, f.c, f.kubeInputs()); err != nil {
		t.Fatal(err)
	}
	if _, err := f.cl.Client.BatchV1().Jobs(f.ns).Get(ctx, "podinfo-migrate", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("the failed hook Job survived teardown: %v", err)
	}
	if _, err := f.cl.Client.CoreV1().Namespaces().Get(ctx, f.ns, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("the namespace knit created survived teardown: %v", err)
	}
}

// A namespace that existed before the release is never removed.
func TestTeardownKeepsANamespaceItDidNotCreate(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	f.ns = f.cl.Namespace(t)
	f.c.Def.Chart.Namespace = f.ns
	f.apply(f.inputs("hi"))
	kubetest.Want(t, "destroy plan", kubetest.Summary(f.plan(f.inputs("hi"), runner.PlanOptions{Destroy: true})), []string{
		"delete Service/" + f.ns + "/web", "delete ConfigMap/" + f.ns + "/web-settings", "delete Secret/" + f.ns + "/web-db",
	})
	if err := f.r.Destroy(ctx, f.c, f.inputs("hi")); err != nil {
		t.Fatal(err)
	}
	if ns, err := f.cl.Client.CoreV1().Namespaces().Get(ctx, f.ns, metav1.GetOptions{}); err != nil || ns.DeletionTimestamp != nil {
		t.Errorf("the namespace that existed before was deleted: %v %v", ns.DeletionTimestamp, err)
	}
}

// A wait that times out names the object that is not ready and its last
// conditions (the test server runs no controllers: the Deployment can never
// become ready, so the short timeout always expires).
func TestWaitTimeoutNamesTheObject(t *testing.T) {
	f := newPodinfo(t, nil)
	ctx := context.Background()
	f.apply(f.kubeInputs())
	now := time.Now().UTC().Format(time.RFC3339)
	status := fmt.Sprintf(`{"status":{"conditions":[{"type":"Available","status":"False","reason":"MinimumReplicasUnavailable","message":"Deployment does not have minimum availability.","lastUpdateTime":%[1]q,"lastTransitionTime":%[1]q}]}}`, now)
	if _, err := f.cl.Client.AppsV1().Deployments(f.ns).Patch(ctx, "podinfo", types.MergePatchType, []byte(status), metav1.PatchOptions{}, "status"); err != nil {
		t.Fatal(err)
	}
	f.c.Def.Chart.Wait, f.c.Def.Chart.Timeout = true, "2s"
	f.c.Def.Chart.Values["replicaCount"] = int64(2)
	_, err := f.r.Apply(ctx, f.c, f.plan(f.kubeInputs(), runner.PlanOptions{}))
	const want = "Deployment podinfo not ready after 2s: condition Available=False MinimumReplicasUnavailable"
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("err = %v, want it to contain %q", err, want)
	}
}

// chart.test runs the chart's test hooks after the apply; their result is
// the apply's.
func TestHelmTestRunsAfterApply(t *testing.T) {
	f := newPodinfo(t, nil)
	f.c.Def.Chart.Test = true
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var failTests atomic.Bool
	// Stand in for the kubelet: the first test Pod fails, the others succeed.
	go func() {
		done := map[string]bool{}
		for ctx.Err() == nil {
			pods, err := f.cl.Client.CoreV1().Pods(f.ns).List(ctx, metav1.ListOptions{})
			if err == nil {
				for _, p := range pods.Items {
					if done[p.Name] || p.Annotations["helm.sh/hook"] == "" {
						continue
					}
					done[p.Name] = true
					phase := corev1.PodSucceeded
					if strings.Contains(p.Name, "-service-test-") && failTests.Load() {
						phase = corev1.PodFailed
					}
					body := fmt.Sprintf(`{"status":{"phase":%q}}`, phase)
					f.cl.Client.CoreV1().Pods(f.ns).Patch(ctx, p.Name, types.MergePatchType, []byte(body), metav1.PatchOptions{}, "status")
				}
			}
			time.Sleep(50 * time.Millisecond)
		}
	}()
	p := f.plan(f.kubeInputs(), runner.PlanOptions{})
	if !strings.Contains(strings.Join(p.Notes, "\n"), "helm test") {
		t.Errorf("the plan does not say the tests run: %q", p.Notes)
	}
	if _, err := f.r.Apply(context.Background(), f.c, p); err != nil {
		t.Fatalf("apply with passing tests: %v", err)
	}
	if !strings.Contains(f.log.String(), "-service-test-") || !strings.Contains(f.log.String(), ": Succeeded") {
		t.Errorf("the log does not report the tests:\n%s", f.log)
	}
	failTests.Store(true)
	f.c.Def.Chart.Values["replicaCount"] = int64(2)
	_, err := f.r.Apply(context.Background(), f.c, f.plan(f.kubeInputs(), runner.PlanOptions{}))
	if err == nil || !strings.Contains(err.Error(), "helm test podinfo failed") || !strings.Contains(err.Error(), "-service-test-") || !strings.Contains(err.Error(), "phase Failed") {
		t.Fatalf("err = %v, want the failing test Pod named", err)
	}
}

// A pre-install hook Job that never completes (no controller runs it, so
// the short timeout always expires): the error names it; the rolled back
// install leaves no hook Job, and teardown removes the namespace knit
// created for it.
func TestHookTimeoutIsNamedAndRollbackLeavesNothing(t *testing.T) {
	f := newPodinfo(t, map[string]any{"knitTest": map[string]any{"hook": true}})
	ctx := context.Background()
	f.c.Def.Chart.Timeout = "2s"
	_, err := f.r.Apply(ctx, f.c, f.plan(f.kubeInputs(), runner.PlanOptions{}))
	const want = "pre-install,pre-upgrade hook Job podinfo-migrate: not complete after 2s: no status conditions reported"
	if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "rolled back") {
		t.Fatalf("err = %v, want it to contain %q", err, want)
	}
	if _, err := f.cl.Client.BatchV1().Jobs(f.ns).Get(ctx, "podinfo-migrate", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("the hook Job survived the rollback: %v", err)
	}
	if err := f.r.Destroy(ctx, f.c, f.kubeInputs()); err != nil {
		t.Fatal(err)
	}
	if _, err := f.cl.Client.CoreV1().Namespaces().Get(ctx, f.ns, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("the namespace knit created survived teardown: %v", err)
	}
}
