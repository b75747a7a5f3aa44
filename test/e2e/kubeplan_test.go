package e2e

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"knit.dev/knit/internal/kubetest"
)

// TestKubernetesDriftBehindAScriptWithoutPlan: a script without a plan
// command cannot be checked against reality; its drift is unknown, and
// the manifests component and the chart it feeds are checked as usual, so
// a Service deleted out of band is reported as that component's drift. The
// kubeconfig is the test cluster's own file, outside the environment's
// folder.
func TestKubernetesDriftBehindAScriptWithoutPlan(t *testing.T) {
	t.Parallel()
	k := newKubeWorld(t)
	k.write(map[string]string{
		"web/service.yaml": `apiVersion: v1
kind: Service
metadata: {name: "${var.name}"}
spec:
  selector: {app: web}
  ports: [{port: 80, targetPort: 8080}]
`,
		"charts/site/Chart.yaml": "apiVersion: v2\nname: site\nversion: 0.1.0\n",
		"charts/site/templates/service.yaml": `apiVersion: v1
kind: Service
metadata: {name: "{{ .Values.name }}-site"}
spec:
  selector: {app: site}
  ports: [{port: 80, targetPort: 8080}]
`,
		"env.yaml": fmt.Sprintf(`apiVersion: knit.dev/v1
kind: Environment
metadata: {name: kscript}
spec:
  teamName: qa
  envName: kscript
  autoApprove: true
  kubeconfig: {path: %[1]q}
  components:
    - name: naming
      type: script
      script: {apply: "echo '{\"name\": \"web\"}'"}
      outputs: [{name: name}]
    - name: web
      type: manifests
      manifests: {path: ./web, namespace: %[2]s}
      variables: [{name: name, valueFrom: naming.name}]
    - name: site
      type: helm
      chart: {path: ./charts/site, namespace: %[2]s}
      variables: [{name: name, valueFrom: naming.name}]
`, k.c.KubeconfigPath, k.ns),
	})
	k.ok("apply", "-f", "env.yaml")
	if r := k.knit("drift", "qa/kscript", "-o", "json"); r.code != 0 {
		t.Fatalf("fresh environment: drift exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	// Out of band: the manifests' Service and the chart's Service go.
	k.mustKubectl("delete", "service", "web")
	k.mustKubectl("delete", "service", "web-site")
	r := k.knit("drift", "qa/kscript", "-o", "json")
	var rep struct {
		Components []struct {
			Name, Status, Drift string
			Resources           []struct{ Address, Action string }
		}
	}
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
		t.Fatalf("drift -o json: %v\n%s%s", err, r.stdout, r.stderr)
	}
	got := map[string]string{}
	for _, c := range rep.Components {
		got[c.Name] = c.Status
		for _, res := range c.Resources {
			got[c.Name] += fmt.Sprintf(" %s %s", res.Action, res.Address)
		}
	}
	want := map[string]string{"naming": "unknown", "web": "drifted create Service/" + k.ns + "/web",
		"site": "drifted create Service/" + k.ns + "/web-site"}
	if r.code != 2 || fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("drift: exit %d, %v; want exit 2, %v\n%s", r.code, got, want, r.stdout)
	}
}

// TestKubernetesAnotherClusterIsACreate: the same environment applied
// against another API server ($KUBECONFIG pointing elsewhere) plans and
// applies every Kubernetes object again, as creates there, instead of
// finding the components "up to date"; plans name the cluster.
func TestKubernetesAnotherClusterIsACreate(t *testing.T) {
	t.Parallel()
	k := newKubeWorld(t)
	other := kubetest.StartAnother(t)
	k.write(map[string]string{"env.yaml": fmt.Sprintf(`apiVersion: knit.dev/v1
kind: Environment
metadata: {name: kother}
spec:
  teamName: qa
  envName: kother
  autoApprove: true
  kubeconfig: {fromEnv: KUBECONFIG}
  components:
    - name: app
      type: helm
      chart: {path: ./charts/app, namespace: %[1]s}
      outputs: [{name: release}]
    - name: config
      type: manifests
      manifests: {path: ./manifests, namespace: %[1]s}
      variables:
        - {name: greeting, value: hi}
        - {name: release, valueFrom: app.release}
`, k.ns)})
	first := []string{"KUBECONFIG=" + k.c.KubeconfigPath}
	if r := k.knitWith(first, "apply", "-f", "env.yaml"); r.code != 0 {
		t.Fatalf("apply on the first cluster: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if r := k.knitWith(first, "apply", "-f", "env.yaml", "-o", "json"); r.code != 0 || fmt.Sprint(componentStatuses(t, r.stdout)) != "map[app:up to date config:up to date]" {
		t.Fatalf("re-apply on the same cluster: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}

	second := []string{"KUBECONFIG=" + other.KubeconfigPath}
	r := k.knitWith(second, "plan", "-f", "env.yaml")
	if want := "on context test (" + other.Server + ")"; r.code != 0 || strings.Count(r.stdout, want) != 2 {
		t.Errorf("plan against the second cluster: exit %d; want each component's plan %q\n%s%s", r.code, want, r.stdout, r.stderr)
	}
	r = k.knitWith(second, "apply", "-f", "env.yaml", "-o", "json")
	if r.code != 0 {
		t.Fatalf("apply on the second cluster: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	var res struct {
		Components []struct {
			Name, Status string
			Plan         *struct {
				Resources []struct{ Address, Action string }
			}
		}
	}
	if err := json.Unmarshal([]byte(r.stdout), &res); err != nil {
		t.Fatal(err)
	}
	for _, c := range res.Components {
		if c.Status != "applied" || c.Plan == nil || len(c.Plan.Resources) == 0 {
			t.Errorf("%s on the second cluster: %s, plan %+v; want applied, all creates", c.Name, c.Status, c.Plan)
			continue
		}
		for _, x := range c.Plan.Resources {
			if x.Action != "create" {
				t.Errorf("%s on the second cluster: %s %s, want create", c.Name, x.Action, x.Address)
			}
		}
	}
	k.c = other // configMap reads the second cluster from here on
	if k.configMap("config-settings") == nil || k.configMap("app-settings") == nil {
		t.Error("the objects were not created on the second cluster")
	}
}
