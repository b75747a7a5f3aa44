package e2e

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// kubeHealthEnv is cluster → app (a helm chart whose Deployment has
// replicas replicas), with a kubernetes check on app when check is set.
func (k *kubeWorld) kubeHealthEnv(replicas int, check bool) string {
	health := ""
	if check {
		health = "      health:\n        - {name: ready, kubernetes: {}}\n        - {name: web, kubernetes: {objects: [Deployment/app]}}\n"
	}
	return fmt.Sprintf(`apiVersion: knit.dev/v1
kind: Environment
metadata: {name: kready}
spec:
  teamName: qa
  envName: kready
  autoApprove: true
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
        path: ./charts/app
        namespace: %[4]s
        values: {replicas: %[5]d}
%[6]s`, k.c.Server, base64.StdEncoding.EncodeToString(k.c.CA), k.path("token"), k.ns, replicas, health)
}

// setDeploymentStatus writes the app Deployment's status as its
// controller would (no controller runs in the test cluster).
func (k *kubeWorld) setDeploymentStatus(observed int64, replicas, available int32, conds ...appsv1.DeploymentCondition) {
	k.t.Helper()
	ctx := context.Background()
	d, err := k.c.Client.AppsV1().Deployments(k.ns).Get(ctx, "app", metav1.GetOptions{})
	if err != nil {
		k.t.Fatal(err)
	}
	d.Status = appsv1.DeploymentStatus{ObservedGeneration: observed, Replicas: replicas, UpdatedReplicas: replicas,
		ReadyReplicas: available, AvailableReplicas: available, UnavailableReplicas: replicas - available, Conditions: conds}
	if _, err := k.c.Client.AppsV1().Deployments(k.ns).UpdateStatus(ctx, d, metav1.UpdateOptions{}); err != nil {
		k.t.Fatal(err)
	}
}

// A chart upgrade whose Deployment does not become available fails its
// kubernetes check, and with it the apply (VerificationFailed); the
// evidence names the Deployment and why. Once the (test's stand-in)
// controller reports it available, the check succeeds. The cluster's
// token, in the kubeconfig output, shows nowhere.
func TestChartUpgradeIsVerifiedByAKubernetesCheck(t *testing.T) {
	t.Parallel()
	k := newKubeWorld(t)
	k.write(map[string]string{"env.yaml": k.kubeHealthEnv(1, false)})
	k.ok("apply", "-f", "env.yaml")
	k.setDeploymentStatus(1, 1, 1, appsv1.DeploymentCondition{Type: appsv1.DeploymentAvailable, Status: corev1.ConditionTrue})

	// The upgrade: nobody rolls the new generation out.
	k.write(map[string]string{"env.yaml": k.kubeHealthEnv(2, true)})
	r := k.knit("apply", "-f", "env.yaml")
	want := "verification Failed: health check app/ready: failed (1) > failureLimit (0): 1 of 1 workloads not ready: Deployment " +
		k.ns + "/app: generation 2 not yet observed by its controller (observed 1)"
	if r.code != 1 || !strings.Contains(r.stderr, want) {
		t.Fatalf("apply of an upgrade that never rolls out: exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	if h := k.knit("history", "qa/kready"); !strings.Contains(h.stdout, "failed") {
		t.Errorf("history:\n%s", h.stdout)
	}

	// The controller gives up: the evidence says so.
	k.setDeploymentStatus(2, 2, 0,
		appsv1.DeploymentCondition{Type: appsv1.DeploymentAvailable, Status: corev1.ConditionFalse, Reason: "MinimumReplicasUnavailable"},
		appsv1.DeploymentCondition{Type: appsv1.DeploymentProgressing, Status: corev1.ConditionFalse, Reason: "ProgressDeadlineExceeded"})
	r = k.knit("health", "qa/kready")
	if r.code != 1 || !strings.Contains(r.stdout, "Deployment "+k.ns+"/app: 0/2 available (ProgressDeadlineExceeded)") {
		t.Errorf("knit health of a Deployment past its deadline: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}

	// Available at last.
	k.setDeploymentStatus(2, 2, 2, appsv1.DeploymentCondition{Type: appsv1.DeploymentAvailable, Status: corev1.ConditionTrue})
	r = k.ok("health", "qa/kready")
	if !strings.Contains(r.stdout, "health: Successful") || !strings.Contains(r.stdout, "1 of 1 workloads ready") {
		t.Errorf("knit health of an available Deployment:\n%s", r.stdout)
	}
	var st struct {
		Health struct {
			Verdict string
			Checks  []struct{ Component, Name, Verdict, Message, Evidence string }
		}
	}
	s := k.ok("status", "qa/kready", "-o", "json")
	if err := json.Unmarshal([]byte(s.stdout), &st); err != nil || st.Health.Verdict != "Successful" || len(st.Health.Checks) != 2 {
		t.Errorf("status -o json health (%v):\n%s", err, s.stdout)
	}
	for _, out := range []string{r.stdout, r.stderr, s.stdout} {
		if strings.Contains(out, k.c.Token) {
			t.Error("the cluster's token shows in knit's output")
		}
	}
}
