package e2e

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"helm.sh/helm/v3/pkg/storage"
	"helm.sh/helm/v3/pkg/storage/driver"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
)

// goodImage is the only image the stand-in controller rolls out.
const goodImage = "nginx:1.27"

// kubeRollbackEnv is cluster → app (chart folder chart, replicas
// replicas) under onFailure rollback, with a kubernetes check on app
// that tolerates a rollout in progress: 4 looks 2 s apart, one ready
// look suffices, so the stand-in controller has 6 s to report it.
func (k *kubeWorld) kubeRollbackEnv(chart string, replicas int) string {
	return fmt.Sprintf(`apiVersion: knit.dev/v1
kind: Environment
metadata: {name: kback}
spec:
  teamName: qa
  envName: kback
  autoApprove: true
  rollout: {onFailure: rollback}
  kubeconfig: {valueFrom: cluster.kubeconfig}
  components:
    - name: cluster
      type: terraform
      module: {source: ./modules/cluster}
      variables:
        - {name: server, value: %[1]q}
        - {name: ca, value: %[2]q}
        - {name: token_file, value: %[3]q}
        - {name: greeting, value: hello}
      outputs:
        - {name: kubeconfig, sensitive: true}
    - name: app
      type: helm
      dependsOn: [cluster]
      chart:
        path: ./%[4]s
        namespace: %[5]s
        values: {replicas: %[6]d}
      health:
        - {name: rolled-out, kubernetes: {objects: [Deployment/app]}, interval: 2s, count: 4, failureLimit: 3}
`, k.c.Server, base64.StdEncoding.EncodeToString(k.c.CA), k.path("token"), chart, k.ns, replicas)
}

// standInController plays the Deployment controller and the kubelet for
// the app Deployment until the test ends: each new generation is
// observed; it becomes available when its pods run goodImage, and with
// any other image it never does (ProgressDeadlineExceeded).
func (k *kubeWorld) standInController() {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	k.t.Cleanup(func() { cancel(); <-done })
	deployments := k.c.Client.AppsV1().Deployments(k.ns)
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			w, err := deployments.Watch(ctx, metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("metadata.name", "app").String()})
			if err != nil {
				continue
			}
			for ev := range w.ResultChan() {
				d, ok := ev.Object.(*appsv1.Deployment)
				if !ok || d.Status.ObservedGeneration >= d.Generation {
					continue
				}
				n := *d.Spec.Replicas
				d.Status = appsv1.DeploymentStatus{ObservedGeneration: d.Generation, Replicas: n, UpdatedReplicas: n,
					Conditions: []appsv1.DeploymentCondition{{Type: appsv1.DeploymentAvailable, Status: corev1.ConditionTrue}}}
				if d.Spec.Template.Spec.Containers[0].Image == goodImage {
					d.Status.ReadyReplicas, d.Status.AvailableReplicas = n, n
				} else {
					d.Status.UnavailableReplicas = n
					d.Status.Conditions = []appsv1.DeploymentCondition{
						{Type: appsv1.DeploymentAvailable, Status: corev1.ConditionFalse, Reason: "MinimumReplicasUnavailable"},
						{Type: appsv1.DeploymentProgressing, Status: corev1.ConditionFalse, Reason: "ProgressDeadlineExceeded"}}
				}
				// A conflict is answered by the next event.
				_, _ = deployments.UpdateStatus(ctx, d, metav1.UpdateOptions{})
			}
		}
	}()
}

// A chart upgrade (chart 0.2.0, whose image never becomes available, and
// new values) fails its kubernetes check, and the release goes back to
// the previous chart revision: a rollback run, naming the check and the
// Deployment's evidence, upgrades the release to a new Helm revision of
// chart 0.1.0 with the old values, and its own kubernetes check passes
// once the (stand-in) controller has rolled the old pods out again.
// Then `knit rollback` by hand does the same after a good upgrade.
func TestChartUpgradeFailingItsKubernetesCheckIsRolledBack(t *testing.T) {
	t.Parallel()
	k := newKubeWorld(t)
	v2 := map[string]string{}
	for n, s := range appChart {
		s = strings.Replace(s, "version: 0.1.0", "version: 0.2.0", 1)
		v2[strings.Replace(n, "charts/app/", "charts/app-2/", 1)] = strings.Replace(s, "image: "+goodImage, "image: nginx:2.0-never-starts", 1)
	}
	k.write(v2)
	k.standInController()

	k.write(map[string]string{"env.yaml": k.kubeRollbackEnv("charts/app", 1)})
	k.ok("apply", "-f", "env.yaml")

	k.write(map[string]string{"env.yaml": k.kubeRollbackEnv("charts/app-2", 2)})
	r := k.knit("apply", "-f", "env.yaml")
	evidence := "Deployment " + k.ns + "/app: 0/2 available (ProgressDeadlineExceeded)"
	if r.code != 1 || !strings.Contains(r.stderr, "app/rolled-out") || !strings.Contains(r.stderr, evidence) ||
		!strings.Contains(r.stderr, "rolling qa/kback back") {
		t.Fatalf("apply of a chart upgrade that never becomes available: exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	if !strings.Contains(r.stdout, "rollback qa/kback") || !strings.Contains(r.stdout, "succeeded") {
		t.Errorf("the rollback (its kubernetes check should pass):\nstdout:\n%s\nstderr:\n%s", r.stdout, r.stderr)
	}

	// Helm: install, the bad upgrade, the upgrade back to chart 0.1.0 and
	// replicas 1.
	history := func() []string {
		t.Helper()
		rels, err := storage.Init(driver.NewSecrets(k.c.Client.CoreV1().Secrets(k.ns))).History("app")
		if err != nil {
			t.Fatal(err)
		}
		out := make([]string, len(rels))
		for _, rel := range rels {
			out[rel.Version-1] = fmt.Sprintf("%d %s %s replicas=%v", rel.Version, rel.Info.Status, rel.Chart.Metadata.Version, rel.Config["replicas"])
		}
		return out
	}
	want := []string{"1 superseded 0.1.0 replicas=1", "2 superseded 0.2.0 replicas=2", "3 deployed 0.1.0 replicas=1"}
	if got := history(); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("Helm history after the rollback:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if img := k.mustKubectl("get", "deployment", "app", "-o", "jsonpath={.spec.replicas} {.spec.template.spec.containers[0].image}"); img != "1 "+goodImage {
		t.Errorf("Deployment after the rollback: %s", img)
	}

	// The rollback run says why, and its verification passed.
	var runs []struct{ ID, Kind, Status, Reason string }
	if err := json.Unmarshal([]byte(k.ok("history", "qa/kback", "-o", "json").stdout), &runs); err != nil {
		t.Fatal(err)
	}
	var rollback *struct{ ID, Kind, Status, Reason string }
	for i := range runs {
		if runs[i].Kind == "rollback" {
			rollback = &runs[i]
		}
	}
	if rollback == nil || rollback.Status != "succeeded" || !strings.Contains(rollback.Reason, "app/rolled-out") ||
		!strings.Contains(rollback.Reason, evidence) {
		t.Errorf("the rollback run: %+v\nall runs: %+v", rollback, runs)
	}
	// The health recorded is the rollback's own verification: its
	// kubernetes check looked at the rolled-back Deployment until ready.
	var st struct {
		Health struct {
			Verdict, RunID string
			Checks         []struct{ Component, Name, Verdict, Evidence string }
		}
	}
	s := k.ok("status", "qa/kback", "-o", "json")
	if err := json.Unmarshal([]byte(s.stdout), &st); err != nil || rollback == nil || st.Health.RunID != rollback.ID ||
		st.Health.Verdict != "Successful" || len(st.Health.Checks) != 1 || st.Health.Checks[0].Name != "rolled-out" ||
		st.Health.Checks[0].Verdict != "Successful" || st.Health.Checks[0].Evidence != "1 of 1 workloads ready" {
		t.Errorf("health after the rollback (%v):\n%s", err, s.stdout)
	}
	if h := k.ok("health", "qa/kback"); !strings.Contains(h.stdout, "health: Successful") {
		t.Errorf("knit health after the rollback:\n%s", h.stdout)
	}

	// By hand: a good upgrade (chart 0.2.0 with the good image), then
	// `knit rollback` takes the release back to chart 0.1.0.
	for n, s := range v2 {
		v2[n] = strings.Replace(s, "nginx:2.0-never-starts", goodImage, 1)
	}
	k.write(v2)
	k.ok("apply", "-f", "env.yaml")
	r = k.ok("rollback", "qa/kback")
	want = append(want[:2:2], "3 superseded 0.1.0 replicas=1", "4 superseded 0.2.0 replicas=2", "5 deployed 0.1.0 replicas=1")
	if got := history(); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("Helm history after knit rollback:\n%s\nwant:\n%s\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"), r.stdout)
	}
	for _, out := range []string{r.stdout, r.stderr} {
		if strings.Contains(out, k.c.Token) {
			t.Error("the cluster's token shows in knit's output")
		}
	}
}
