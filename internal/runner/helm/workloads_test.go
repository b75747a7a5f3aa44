package helm

import (
	"context"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"knit.dev/knit/internal/kubetest"
	"knit.dev/knit/internal/runner"
	"knit.dev/knit/internal/spec"
	"knit.dev/knit/internal/testtools"
)

// The workloads of a release are those of its deployed revision's
// manifest, judged from the status the cluster has (set here through the
// status subresource: no controller runs).
func TestReleaseWorkloads(t *testing.T) {
	f := newFixture(t)
	testtools.WriteFiles(t, f.c.Spec.Dir, map[string]string{"charts/web/templates/deploy.yaml": `apiVersion: apps/v1
kind: Deployment
metadata: {name: {{ .Release.Name }}}
spec:
  replicas: 2
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec: {containers: [{name: web, image: "nginx:1"}]}
`})
	f.c.Def.Outputs = nil
	in := f.inputs("hi")
	f.apply(in)
	ctx := context.Background()
	w, err := f.r.Workloads(ctx, f.c, in, nil)
	if err != nil {
		t.Fatal(err)
	}
	if w.Checked != 1 || strings.Join(w.NotReady, "\n") != "Deployment "+f.ns+"/web: generation 1 not yet observed by its controller (observed 0)" {
		t.Fatalf("just installed: %+v", w)
	}
	apps := f.cl.Client.AppsV1().Deployments(f.ns)
	d, err := apps.Get(ctx, "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	d.Status = appsv1.DeploymentStatus{ObservedGeneration: 1, Replicas: 2, UpdatedReplicas: 2, ReadyReplicas: 1, AvailableReplicas: 1,
		Conditions: []appsv1.DeploymentCondition{{Type: appsv1.DeploymentAvailable, Status: corev1.ConditionTrue}}}
	if d, err = apps.UpdateStatus(ctx, d, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if w, err = f.r.Workloads(ctx, f.c, in, []string{"Deployment/web"}); err != nil || len(w.NotReady) != 1 || w.NotReady[0] != "Deployment "+f.ns+"/web: 1/2 available" {
		t.Errorf("one of two available: %+v %v", w, err)
	}
	d.Status.AvailableReplicas, d.Status.ReadyReplicas = 2, 2
	if _, err = apps.UpdateStatus(ctx, d, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if w, err = f.r.Workloads(ctx, f.c, in, nil); err != nil || w.Checked != 1 || len(w.NotReady) != 0 {
		t.Errorf("available: %+v %v", w, err)
	}
	// The release's Service and ConfigMap are no workloads; a Deployment
	// of the same name in another namespace is not the release's.
	if w, err = f.r.Workloads(ctx, f.c, in, []string{"Deployment/default/web"}); err != nil || len(w.NotReady) != 1 ||
		w.NotReady[0] != "Deployment default/web: not an object of this component (not read)" {
		t.Errorf("another namespace: %+v %v", w, err)
	}
}

// Helm's release storage makes requests without a context: against an API
// server that never answers, the look still ends by the caller's deadline.
func TestReleaseWorkloadsOfAHangingClusterEndByTheDeadline(t *testing.T) {
	kc := kubetest.Hanging(t)
	env := &spec.Environment{Dir: t.TempDir(), Spec: spec.EnvSpec{TeamName: "t", EnvName: "e"}}
	def := &spec.Component{Name: "web", Type: spec.TypeHelm, Chart: &spec.Chart{Path: "./charts/web", Namespace: "shop"},
		Kubeconfig: &spec.Kubeconfig{ValueFrom: "cluster.kubeconfig"}}
	env.Spec.Components = []*spec.Component{def}
	c := runner.Component{Env: "t/e", Spec: env, Def: def, WorkDir: t.TempDir(), Log: &strings.Builder{}}
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	done := make(chan error, 1)
	go func() {
		_, err := New(Options{DataDir: t.TempDir()}).Workloads(ctx, c, runner.Inputs{spec.InputKubeconfig: kc}, nil)
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
