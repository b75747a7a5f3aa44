package manifests

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"knit.dev/knit/internal/kube"
	"knit.dev/knit/internal/kubetest"
	"knit.dev/knit/internal/runner"
	"knit.dev/knit/internal/spec"
)

const workloads = `
apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  replicas: 1
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec: {containers: [{name: web, image: "nginx:1"}]}
---
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: db}
spec:
  replicas: 1
  serviceName: db
  selector: {matchLabels: {app: db}}
  template:
    metadata: {labels: {app: db}}
    spec: {containers: [{name: db, image: "postgres:17"}]}
---
apiVersion: batch/v1
kind: Job
metadata: {name: migrate}
spec:
  template:
    spec:
      restartPolicy: Never
      containers: [{name: migrate, image: "busybox:1"}]
---
apiVersion: v1
kind: ConfigMap
metadata: {name: settings}
data: {a: b}
`

// The workloads a manifests component applied are judged from their status
// as the cluster has it (no kubelet runs: the test writes the status
// through the status subresource, as the controllers would).
func TestWorkloadsAreReadyWhenTheirStatusSaysSo(t *testing.T) {
	f := newFixture(t, map[string]string{"k8s/app.yaml": workloads})
	f.c.Def.Outputs = nil
	f.apply(runner.Inputs{})
	ctx := context.Background()
	look := func(objects ...string) runner.Workloads {
		t.Helper()
		w, err := f.r.Workloads(ctx, f.c, runner.Inputs{}, objects)
		if err != nil {
			t.Fatal(err)
		}
		return w
	}
	ns := f.ns
	// Just applied: no controller has seen them.
	w := look()
	want := []string{
		"Deployment " + ns + "/web: generation 1 not yet observed by its controller (observed 0)",
		"StatefulSet " + ns + "/db: generation 1 not yet observed by its controller (observed 0)",
		"Job " + ns + "/migrate: not complete (0 active, 0 succeeded)",
	}
	if w.Checked != 3 || strings.Join(w.NotReady, "\n") != strings.Join(want, "\n") {
		t.Fatalf("just applied: %d checked, not ready:\n%s", w.Checked, strings.Join(w.NotReady, "\n"))
	}

	// The Deployment's controller saw it, but no replica is available.
	apps, client := f.cl.Client.AppsV1(), f.cl.Client
	d, err := apps.Deployments(ns).Get(ctx, "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	d.Status = appsv1.DeploymentStatus{ObservedGeneration: 1, Replicas: 1, UpdatedReplicas: 1, UnavailableReplicas: 1,
		Conditions: []appsv1.DeploymentCondition{
			{Type: appsv1.DeploymentAvailable, Status: corev1.ConditionFalse, Reason: "MinimumReplicasUnavailable"},
			{Type: appsv1.DeploymentProgressing, Status: corev1.ConditionFalse, Reason: "ProgressDeadlineExceeded"},
		}}
	if d, err = apps.Deployments(ns).UpdateStatus(ctx, d, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if w := look("Deployment/web"); w.Checked != 1 || len(w.NotReady) != 1 || w.NotReady[0] != "Deployment "+ns+"/web: 0/1 available (ProgressDeadlineExceeded)" {
		t.Errorf("deadline exceeded: %+v", w)
	}
	// Available: the Deployment is ready.
	d.Status = appsv1.DeploymentStatus{ObservedGeneration: 1, Replicas: 1, UpdatedReplicas: 1, ReadyReplicas: 1, AvailableReplicas: 1,
		Conditions: []appsv1.DeploymentCondition{{Type: appsv1.DeploymentAvailable, Status: corev1.ConditionTrue, Reason: "MinimumReplicasAvailable"}}}
	if _, err = apps.Deployments(ns).UpdateStatus(ctx, d, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if w := look("Deployment/web"); w.Checked != 1 || len(w.NotReady) != 0 {
		t.Errorf("available: %+v", w)
	}

	// The StatefulSet ready, the Job failed for good.
	s, err := apps.StatefulSets(ns).Get(ctx, "db", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	s.Status = appsv1.StatefulSetStatus{ObservedGeneration: 1, Replicas: 1, UpdatedReplicas: 1, ReadyReplicas: 1, AvailableReplicas: 1, CurrentReplicas: 1}
	if _, err := apps.StatefulSets(ns).UpdateStatus(ctx, s, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	j, err := client.BatchV1().Jobs(ns).Get(ctx, "migrate", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	now := metav1.Now()
	j.Status = batchv1.JobStatus{StartTime: &now, Failed: 7, Conditions: []batchv1.JobCondition{
		{Type: batchv1.JobFailureTarget, Status: corev1.ConditionTrue, Reason: "BackoffLimitExceeded", LastTransitionTime: now},
		{Type: batchv1.JobFailed, Status: corev1.ConditionTrue, Reason: "BackoffLimitExceeded", LastTransitionTime: now}}}
	if _, err := client.BatchV1().Jobs(ns).UpdateStatus(ctx, j, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if w := look(); w.Checked != 3 || strings.Join(w.NotReady, "\n") != "Job "+ns+"/migrate: failed (BackoffLimitExceeded)" {
		t.Errorf("job failed: %+v", w)
	}
	if w := look("StatefulSet/db", "Deployment/"+ns+"/web"); w.Checked != 2 || len(w.NotReady) != 0 {
		t.Errorf("the ready ones: %+v", w)
	}
}

// A check that names a workload its component does not own is told so,
// and the object is never read, even when it exists in a namespace the
// component's cluster access can read.
func TestWorkloadsOfAnotherComponentAreNotRead(t *testing.T) {
	f := newFixture(t, map[string]string{"k8s/app.yaml": workloads})
	f.c.Def.Outputs = nil
	f.apply(runner.Inputs{})
	ctx := context.Background()
	other := f.cl.Namespace(t)
	var d appsv1.Deployment
	d.Name, d.Namespace = "web", other
	d.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}
	d.Spec.Template.Labels = map[string]string{"app": "web"}
	d.Spec.Template.Spec.Containers = []corev1.Container{{Name: "web", Image: "nginx:1"}}
	if _, err := f.cl.Client.AppsV1().Deployments(other).Create(ctx, &d, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	w, err := f.r.Workloads(ctx, f.c, runner.Inputs{}, []string{"Deployment/" + other + "/web", "Deployment/api", "Job/migrate"})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"Deployment " + other + "/web: not an object of this component (not read)",
		"Deployment " + f.ns + "/api: not an object of this component (not read)",
		"Job " + f.ns + "/migrate: not complete (0 active, 0 succeeded)",
	}
	if w.Checked != 3 || strings.Join(w.NotReady, "\n") != strings.Join(want, "\n") {
		t.Errorf("got %d checked:\n%s", w.Checked, strings.Join(w.NotReady, "\n"))
	}
}

// A component owning thousands of workloads: the look lists them a page
// at a time, names the first few that are not ready and counts the others;
// past kube.MaxWorkloads it refuses to judge.
func TestWorkloadsLookIsBounded(t *testing.T) {
	f := newFixture(t, map[string]string{"k8s/app.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: settings}\n"})
	f.c.Def.Outputs = nil
	ctx := context.Background()
	ns := f.cl.Namespace(t)
	const n = 1200 // more than two pages
	refs := make([]kube.Ref, 0, n)
	cfg := rest.CopyConfig(f.cl.Config)
	cfg.QPS, cfg.Burst = 1000, 1000 // the shared client's limit would take minutes
	fast, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	for i := range n {
		var j batchv1.Job
		j.Name, j.Namespace = fmt.Sprintf("job-%04d", i), ns
		j.Spec.Template.Spec.RestartPolicy = corev1.RestartPolicyNever
		j.Spec.Template.Spec.Containers = []corev1.Container{{Name: "c", Image: "busybox:1"}}
		if _, err := fast.BatchV1().Jobs(ns).Create(ctx, &j, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		refs = append(refs, kube.Ref{APIVersion: "batch/v1", Kind: "Job", Namespace: ns, Name: j.Name})
	}
	if err := (kube.Inventory{Objects: refs}).Save(f.c.WorkDir); err != nil {
		t.Fatal(err)
	}
	w, err := f.r.Workloads(ctx, f.c, runner.Inputs{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if w.Checked != n || len(w.NotReady) != 5 || w.More != n-5 || w.NotReady[0] != "Job "+ns+"/job-0000: not complete (0 active, 0 succeeded)" {
		t.Errorf("checked %d, named %d, more %d: %q", w.Checked, len(w.NotReady), w.More, w.NotReady)
	}
	for i := n; i <= kube.MaxWorkloads; i++ {
		refs = append(refs, kube.Ref{APIVersion: "batch/v1", Kind: "Job", Namespace: ns, Name: fmt.Sprintf("job-%04d", i)})
	}
	if err := (kube.Inventory{Objects: refs}).Save(f.c.WorkDir); err != nil {
		t.Fatal(err)
	}
	if _, err := f.r.Workloads(ctx, f.c, runner.Inputs{}, nil); err == nil || !strings.Contains(err.Error(), "too many to judge at once") {
		t.Errorf("past the bound: %v", err)
	}
}

// An API server that accepts connections and never answers: the look
// ends with the caller's deadline, with an error (the check's measurement
// is then an Error, and enough of them Inconclusive).
func TestWorkloadsOfAHangingClusterEndByTheDeadline(t *testing.T) {
	dir := t.TempDir()
	kc := kubetest.Hanging(t)
	if err := os.WriteFile(filepath.Join(dir, "kubeconfig"), []byte(kc), 0o600); err != nil {
		t.Fatal(err)
	}
	env := &spec.Environment{Dir: dir, Spec: spec.EnvSpec{TeamName: "t", EnvName: "e"}}
	def := &spec.Component{Name: "app", Type: spec.TypeManifests, Manifests: &spec.Manifests{Path: "./k8s", Namespace: "shop"},
		Kubeconfig: &spec.Kubeconfig{Path: "./kubeconfig"}}
	env.Spec.Components = []*spec.Component{def}
	work := t.TempDir()
	if err := (kube.Inventory{Objects: []kube.Ref{{APIVersion: "apps/v1", Kind: "Deployment", Namespace: "shop", Name: "web"}}}).Save(work); err != nil {
		t.Fatal(err)
	}
	c := runner.Component{Env: "t/e", Spec: env, Def: def, WorkDir: work, Log: os.Stderr}
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	done := make(chan error, 1)
	go func() {
		_, err := New(Options{DataDir: t.TempDir()}).Workloads(ctx, c, runner.Inputs{}, nil)
		done <- err
	}()
	select {
	case err := <-done:
		if err == nil {
			t.Fatal("a cluster that never answers gave a look")
		}
	case <-time.After(2 * time.Minute): // a failure guard, not a timing assertion
		t.Fatal("the look outlived its deadline")
	}
}
