package e2e

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"knit.dev/knit/internal/kubetest"
	"knit.dev/knit/internal/store"
	"knit.dev/knit/internal/testtools"
)

// The Kubernetes tests run the real knit binary and OpenTofu against a real
// API server (etcd and kube-apiserver on loopback, started once for the
// package by internal/kubetest, stopped by TestMain). Each test works in a
// namespace of its own. Without the binaries they skip, except in CI or
// under make (KNIT_REQUIRE_TOOLS=1), where they fail.

// clusterModule stands in for a module that creates a cluster: it hands over
// a kubeconfig for the test API server, built from the server URL, the CA
// and a token read from a file, so that the token is in no file knit reads
// from the environment's folder. The password is computed, so it is in no
// source file either: any copy of it in knit's data dir is knit's doing.
const clusterModule = `
variable "server" { type = string }
variable "ca" { type = string }
variable "token_file" { type = string }
variable "greeting" { type = string }
resource "terraform_data" "cluster" { input = var.server }
output "kubeconfig" {
  sensitive = true
  value = yamlencode({
    apiVersion        = "v1"
    kind              = "Config"
    "current-context" = "e2e"
    clusters = [{ name = "e2e", cluster = { server = terraform_data.cluster.output, "certificate-authority-data" = var.ca } }]
    users    = [{ name = "e2e", user = { token = trimspace(file(var.token_file)) } }]
    contexts = [{ name = "e2e", context = { cluster = "e2e", user = "e2e" } }]
  })
}
output "greeting" { value = "${var.greeting}, from terraform" }
output "password" {
  value     = sha256("knit-k8s-e2e-seed")
  sensitive = true
}
`

var (
	appChart = map[string]string{
		"charts/app/Chart.yaml":  "apiVersion: v2\nname: app\nversion: 0.1.0\n",
		"charts/app/values.yaml": "replicas: 1\ngreeting: none\nport: 80\ndb: {password: unset}\n",
		"charts/app/templates/settings.yaml": `apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Release.Name }}-settings
data:
  greeting: {{ .Values.greeting | quote }}
`,
		"charts/app/templates/db.yaml": `apiVersion: v1
kind: Secret
metadata:
  name: {{ .Release.Name }}-db
stringData:
  password: {{ .Values.db.password | quote }}
`,
		"charts/app/templates/deployment.yaml": `apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ .Release.Name }}
spec:
  replicas: {{ .Values.replicas }}
  selector:
    matchLabels: {app: {{ .Release.Name }}}
  template:
    metadata:
      labels: {app: {{ .Release.Name }}}
    spec:
      containers:
        - name: web
          image: nginx:1.27
          env:
            - {name: GREETING, value: {{ .Values.greeting | quote }}}
`,
		"charts/app/templates/service.yaml": `apiVersion: v1
kind: Service
metadata:
  name: {{ .Release.Name }}
spec:
  selector: {app: {{ .Release.Name }}}
  ports: [{port: {{ .Values.port }}, targetPort: 8080}]
`,
	}
	configManifests = map[string]string{
		"manifests/settings.yaml": `apiVersion: v1
kind: ConfigMap
metadata: {name: config-settings}
data:
  greeting: "${var.greeting}"
  release: "${var.release}"
`,
		"manifests/extra.yaml": `apiVersion: v1
kind: ConfigMap
metadata: {name: config-extra}
data: {note: extra}
`,
	}
)

// kubeWorld is a world with the test API server and a namespace in it.
type kubeWorld struct {
	*world
	c  *kubetest.Cluster
	ns string
}

func newKubeWorld(t *testing.T) *kubeWorld {
	w := newWorld(t)
	c := kubetest.Start(t)
	k := &kubeWorld{world: w, c: c, ns: c.Namespace(t)}
	if err := os.WriteFile(w.path("token"), []byte(c.Token+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	files := map[string]string{"modules/cluster/main.tf": clusterModule}
	for n, s := range appChart {
		files[n] = s
	}
	for n, s := range configManifests {
		files[n] = s
	}
	w.write(files)
	return k
}

// clusterEnv renders the environment cluster → app → config in the world's
// namespace; replicas is the chart's replica count, configExtra more YAML
// for the config component.
func (k *kubeWorld) clusterEnv(name string, replicas int, configExtra string) string {
	return fmt.Sprintf(`apiVersion: knit.dev/v1
kind: Environment
metadata: {name: %[1]s}
spec:
  teamName: qa
  envName: %[1]s
  autoApprove: true
  kubeconfig: {valueFrom: cluster.kubeconfig}
  components:
    - name: cluster
      type: terraform
      module: {source: ./modules/cluster}
      variables:
        - {name: server, value: %[2]q}
        - {name: ca, value: %[3]q}
        - {name: token_file, value: %[4]q}
        - {name: greeting, value: hello}
      outputs:
        - {name: kubeconfig, sensitive: true}
        - {name: greeting}
        - {name: password, sensitive: true}
    - name: app
      type: helm
      dependsOn: [cluster]
      chart:
        path: ./charts/app
        namespace: %[5]s
        values: {replicas: %[6]d}
      variables:
        - {name: greeting, valueFrom: cluster.greeting}
        - {name: db.password, valueFrom: cluster.password}
      outputs:
        - {name: revision}
        - {name: release}
        - {name: settings, from: "ConfigMap/app-settings:.data.greeting"}
    - name: config
      type: manifests
      dependsOn: [app]
      manifests: {path: ./manifests, namespace: %[5]s}
      variables:
        - {name: greeting, valueFrom: cluster.greeting}
        - {name: release, valueFrom: app.release}
%[7]s`, name, k.c.Server, base64.StdEncoding.EncodeToString(k.c.CA), k.path("token"), k.ns, replicas, configExtra)
}

// kubectl runs kubectl as the administrator in the world's namespace.
func (k *kubeWorld) kubectl(args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, k.c.Kubectl, append([]string{"--kubeconfig", k.c.KubeconfigPath, "-n", k.ns}, args...)...)
	cmd.Env = append(os.Environ(), "HOME="+k.dir)
	out, err := cmd.CombinedOutput()
	return strings.TrimSpace(string(out)), err
}

func (k *kubeWorld) mustKubectl(args ...string) string {
	k.t.Helper()
	out, err := k.kubectl(args...)
	if err != nil {
		k.t.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return out
}

// configMap returns a ConfigMap's data in the world's namespace, or nil when
// it does not exist.
func (k *kubeWorld) configMap(name string) map[string]string {
	k.t.Helper()
	cm, err := k.c.Client.CoreV1().ConfigMaps(k.ns).Get(context.Background(), name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		k.t.Fatal(err)
	}
	if cm.Data == nil {
		return map[string]string{}
	}
	return cm.Data
}

// helmReleases counts the release records Helm keeps in the namespace.
func (k *kubeWorld) helmReleases(name string) int {
	k.t.Helper()
	l, err := k.c.Client.CoreV1().Secrets(k.ns).List(context.Background(),
		metav1.ListOptions{LabelSelector: "owner=helm,name=" + name})
	if err != nil {
		k.t.Fatal(err)
	}
	return len(l.Items)
}

// componentRuns returns a run's component runs by component name.
func (k *kubeWorld) componentRuns(stdout string) map[string]store.ComponentRun {
	k.t.Helper()
	var res struct{ RunID string }
	if err := json.Unmarshal([]byte(stdout), &res); err != nil || res.RunID == "" {
		k.t.Fatalf("no run ID in the JSON result (%v):\n%s", err, stdout)
	}
	crs, err := k.openStore().ComponentRuns(context.Background(), res.RunID)
	if err != nil {
		k.t.Fatal(err)
	}
	m := map[string]store.ComponentRun{}
	for _, cr := range crs {
		m[cr.Component] = cr
	}
	return m
}

// before fails unless component a's run finished before b's started.
func before(t *testing.T, crs map[string]store.ComponentRun, a, b string) {
	t.Helper()
	ca, oka := crs[a]
	cb, okb := crs[b]
	if !oka || !okb {
		t.Errorf("component runs of %s and %s not both recorded: %v", a, b, crs)
		return
	}
	if cb.StartedAt.Before(ca.FinishedAt) {
		t.Errorf("%s started at %s, before %s finished at %s", b, cb.StartedAt, a, ca.FinishedAt)
	}
}

func TestKubernetesOrderedApplyPlanDiffAndTeardown(t *testing.T) {
	t.Parallel()
	k := newKubeWorld(t)
	k.write(map[string]string{"env.yaml": k.clusterEnv("k8s", 1, "")})
	r := k.ok("apply", "-f", "env.yaml", "-o", "json")
	got := componentStatuses(t, r.stdout)
	if fmt.Sprint(got) != "map[app:applied cluster:applied config:applied]" {
		t.Errorf("statuses %v", got)
	}
	crs := k.componentRuns(r.stdout)
	before(t, crs, "cluster", "app")
	before(t, crs, "app", "config")

	// The objects exist, with values that came from Terraform.
	const greeting = "hello, from terraform"
	if v := k.configMap("app-settings")["greeting"]; v != greeting {
		t.Errorf("the chart's ConfigMap has greeting %q, want %q", v, greeting)
	}
	if v := k.mustKubectl("get", "deployment", "app", "-o", "jsonpath={.spec.replicas} {.spec.template.spec.containers[0].env[0].value}"); v != "1 "+greeting {
		t.Errorf("deployment: %q", v)
	}
	if v := k.configMap("config-settings"); v["greeting"] != greeting || v["release"] != "app" {
		t.Errorf("the manifests' ConfigMap holds %v", v)
	}
	if k.configMap("config-extra") == nil {
		t.Error("config-extra was not applied")
	}
	if n := k.helmReleases("app"); n != 1 {
		t.Errorf("%d helm release records, want 1", n)
	}
	if v := strings.TrimSpace(k.ok("output", "qa/k8s", "app", "settings").stdout); v != greeting {
		t.Errorf("output read from the live ConfigMap: %q", v)
	}
	// The objects created later carry knit's field manager for manifests.
	if v := k.mustKubectl("get", "configmap", "config-settings", "--show-managed-fields", "-o", "jsonpath={.metadata.managedFields[*].manager}"); !strings.Contains(v, "knit") {
		t.Errorf("config-settings managers: %q", v)
	}

	// Nothing changed: a plan shows no changes.
	if r := k.knit("plan", "-f", "env.yaml", "--detailed-exitcode"); r.code != 0 {
		t.Errorf("plan of an unchanged environment: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}

	// A values change: the plan names the object and the field.
	k.write(map[string]string{"env.yaml": k.clusterEnv("k8s", 3, "")})
	r = k.knit("plan", "-f", "env.yaml", "--detailed-exitcode")
	if r.code != 2 {
		t.Fatalf("plan after a values change: exit %d, want 2\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	addr := "Deployment/" + k.ns + "/app"
	if !strings.Contains(r.stdout, addr) || !strings.Contains(r.stdout, "spec.replicas: 1 → 3") || !strings.Contains(r.stdout, "replicas: 1 → 3") {
		t.Errorf("plan does not show %s and spec.replicas: 1 → 3:\n%s", addr, r.stdout)
	}
	if strings.Contains(r.stdout, "revision 0") {
		t.Errorf("plan header says revision 0:\n%s", r.stdout)
	}
	if strings.Contains(r.stdout, "ConfigMap/"+k.ns+"/app-settings") {
		t.Errorf("plan shows the unchanged ConfigMap:\n%s", r.stdout)
	}
	r = k.knit("plan", "-f", "env.yaml", "-o", "json")
	var plan struct {
		Components []struct {
			Name string
			Plan struct {
				Resources []struct {
					Address, Action string
					Attributes      []string
				}
			}
		}
	}
	if err := json.Unmarshal([]byte(r.stdout), &plan); err != nil {
		t.Fatalf("plan -o json: %v\n%s", err, r.stdout)
	}
	var changes []string
	for _, c := range plan.Components {
		for _, res := range c.Plan.Resources {
			changes = append(changes, fmt.Sprintf("%s %s %s %v", c.Name, res.Action, res.Address, res.Attributes))
		}
	}
	if want := fmt.Sprintf("[app update Release/%s/app [replicas] app update %s [spec.replicas]]", k.ns, addr); fmt.Sprint(changes) != want {
		t.Errorf("planned changes %v, want %s\n%s", changes, want, r.stdout)
	}
	if v := k.mustKubectl("get", "deployment", "app", "-o", "jsonpath={.spec.replicas}"); v != "1" {
		t.Errorf("plan changed the deployment: replicas %s", v)
	}
	k.ok("apply", "-f", "env.yaml")
	if v := k.mustKubectl("get", "deployment", "app", "-o", "jsonpath={.spec.replicas}"); v != "3" {
		t.Errorf("after apply: replicas %s, want 3", v)
	}
	if v := strings.TrimSpace(k.ok("output", "qa/k8s", "app", "revision").stdout); v != "2" {
		t.Errorf("release revision %q after the upgrade, want 2", v)
	}

	// Teardown: config, then app, then cluster.
	r = k.ok("teardown", "qa/k8s", "--auto-approve", "-o", "json")
	got = componentStatuses(t, r.stdout)
	if fmt.Sprint(got) != "map[app:destroyed cluster:destroyed config:destroyed]" {
		t.Errorf("teardown statuses %v", got)
	}
	crs = k.componentRuns(r.stdout)
	before(t, crs, "config", "app")
	before(t, crs, "app", "cluster")
	for _, cm := range []string{"config-settings", "config-extra", "app-settings"} {
		if k.configMap(cm) != nil {
			t.Errorf("ConfigMap %s survived teardown", cm)
		}
	}
	if out, err := k.kubectl("get", "deployment", "app"); err == nil {
		t.Errorf("deployment survived teardown: %s", out)
	}
	if n := k.helmReleases("app"); n != 0 {
		t.Errorf("%d helm release records left after teardown", n)
	}
	if status := k.ok("status", "qa/k8s").stdout; !strings.Contains(status, "torn-down") {
		t.Errorf("status after teardown:\n%s", status)
	}
}

func TestKubernetesDriftReconcileAndPrune(t *testing.T) {
	t.Parallel()
	k := newKubeWorld(t)
	// config needs a person's approval, app does not.
	k.write(map[string]string{"env.yaml": k.clusterEnv("kdrift", 1, "      autoApprove: false\n")})
	k.ok("apply", "-f", "env.yaml", "--auto-approve")
	if r := k.knit("drift", "qa/kdrift"); r.code != 0 {
		t.Fatalf("fresh environment: drift exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}

	// Out of band: the chart's ConfigMap edited, the manifests' extra
	// deleted. Fields another manager adds are not drift.
	k.mustKubectl("patch", "configmap", "app-settings", "--type", "merge", "-p", `{"data":{"greeting":"tampered"}}`)
	k.mustKubectl("delete", "configmap", "config-extra")
	k.mustKubectl("annotate", "configmap", "config-settings", "team=ops")
	k.mustKubectl("label", "deployment", "app", "owner=ops")
	r := k.knit("drift", "qa/kdrift", "-o", "json")
	if r.code != 2 {
		t.Fatalf("drift exit %d, want 2\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	var rep struct {
		Components []struct {
			Name, Status string
			Resources    []struct {
				Address, Action string
				Attributes      []string
			}
		}
	}
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
		t.Fatal(err)
	}
	drifted := map[string]string{}
	for _, c := range rep.Components {
		switch c.Status {
		case "in sync":
		case "drifted":
			var res []string
			for _, x := range c.Resources {
				res = append(res, fmt.Sprintf("%s %s %v", x.Action, x.Address, x.Attributes))
			}
			drifted[c.Name] = strings.Join(res, ",")
		default:
			t.Errorf("%s: %s", c.Name, c.Status)
		}
	}
	want := map[string]string{
		"app":    fmt.Sprintf("update ConfigMap/%s/app-settings [data.greeting]", k.ns),
		"config": fmt.Sprintf("create ConfigMap/%s/config-extra []", k.ns),
	}
	if fmt.Sprint(drifted) != fmt.Sprint(want) {
		t.Errorf("drifted %v, want %v", drifted, want)
	}
	text := k.knit("drift", "qa/kdrift")
	for _, name := range []string{"app-settings", "config-extra"} {
		if text.code != 2 || !strings.Contains(text.stdout, name) {
			t.Errorf("drift report (exit %d) does not name %s:\n%s", text.code, name, text.stdout)
		}
	}

	// Reconcile: app at once, config after approval, as for Terraform.
	r = k.knit("drift", "qa/kdrift", "--reconcile", "--reason", "restore", "-o", "json")
	if r.code != 3 {
		t.Fatalf("reconcile exit %d, want 3 (config waits for approval)\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	if got := componentStatuses(t, r.stdout); got["app"] != "applied" || got["config"] != "awaiting-approval" {
		t.Errorf("reconcile statuses %v", got)
	}
	if v := k.configMap("app-settings")["greeting"]; v != "hello, from terraform" {
		t.Errorf("app-settings not restored: greeting %q", v)
	}
	if k.configMap("config-extra") != nil {
		t.Error("config-extra restored without approval")
	}
	k.ok("approve", "qa/kdrift", "config", "--reason", "restore config-extra")
	if k.configMap("config-extra") == nil {
		t.Error("config-extra not restored after approval")
	}
	if r := k.knit("drift", "qa/kdrift"); r.code != 0 {
		t.Errorf("still drifted after reconcile: exit %d\n%s", r.code, r.stdout)
	}
	// Other managers' fields survive knit's reconcile.
	if v := k.mustKubectl("get", "configmap", "config-settings", "-o", "jsonpath={.metadata.annotations.team}"); v != "ops" {
		t.Errorf("another manager's annotation was removed: %q", v)
	}

	// An object removed from the folder is pruned on the next apply.
	if err := os.Remove(k.path("manifests/extra.yaml")); err != nil {
		t.Fatal(err)
	}
	r = k.knit("plan", "-f", "env.yaml", "--detailed-exitcode")
	if r.code != 2 || !strings.Contains(r.stdout, "ConfigMap/"+k.ns+"/config-extra") {
		t.Errorf("plan does not show the pruning (exit %d):\n%s", r.code, r.stdout)
	}
	k.ok("apply", "-f", "env.yaml", "--auto-approve")
	if k.configMap("config-extra") != nil {
		t.Error("config-extra, removed from the folder, was not pruned")
	}
	if k.configMap("config-settings") == nil {
		t.Error("config-settings was deleted with it")
	}
	if logs := k.ok("logs", "qa/kdrift", "config").stdout; !strings.Contains(logs, "pruned") || !strings.Contains(logs, "config-extra") {
		t.Errorf("config's log does not record the pruning:\n%s", logs)
	}
}

// bad installs into a namespace that only its install creates: its plan
// cannot dry-run objects there, so the invalid port is found by the
// install, which rolls back. (In a namespace that exists, the plan finds
// it: see TestAnObjectAdmissionRejectsFailsThePlan.)
func TestKubernetesFailedInstallRollsBackAndSkipsDependents(t *testing.T) {
	t.Parallel()
	k := newKubeWorld(t)
	// Cluster access from a kubeconfig file beside the environment: this
	// test needs no Terraform component.
	if err := os.WriteFile(k.path("kubeconfig"), k.c.Kubeconfig, 0o600); err != nil {
		t.Fatal(err)
	}
	k.write(map[string]string{"env.yaml": fmt.Sprintf(`apiVersion: knit.dev/v1
kind: Environment
metadata: {name: kfail}
spec:
  teamName: qa
  envName: kfail
  autoApprove: true
  kubeconfig: {path: ./kubeconfig}
  components:
    - name: bad
      type: helm
      chart:
        path: ./charts/app
        namespace: %[1]s-bad
        values: {port: 99999, greeting: doomed}
      outputs: [{name: release}]
    - name: after
      type: manifests
      dependsOn: [bad]
      manifests: {path: ./manifests, namespace: %[1]s}
      variables:
        - {name: greeting, value: hi}
        - {name: release, valueFrom: bad.release}
    - name: good
      type: helm
      chart: {path: ./charts/app, namespace: %[1]s}
`, k.ns)})
	r := k.knit("apply", "-f", "env.yaml", "-o", "json")
	if r.code != 1 {
		t.Fatalf("apply: exit %d, want 1\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	got := componentStatuses(t, r.stdout)
	if fmt.Sprint(got) != "map[after:skipped bad:failed good:applied]" {
		t.Errorf("statuses %v", got)
	}
	// The Kubernetes error is reported, in the output and in the log.
	const kubeErr = "spec.ports[0].port: Invalid value: 99999"
	if !strings.Contains(r.stdout+r.stderr, kubeErr) {
		t.Errorf("apply output lacks the Kubernetes error %q:\n%s\n%s", kubeErr, r.stdout, r.stderr)
	}
	if !strings.Contains(r.stdout+r.stderr, "rolled back") {
		t.Errorf("apply output does not say the install was rolled back:\n%s\n%s", r.stdout, r.stderr)
	}
	if logs := k.ok("logs", "qa/kfail", "bad").stdout; !strings.Contains(logs, kubeErr) {
		t.Errorf("bad's log lacks the Kubernetes error:\n%s", logs)
	}
	for _, cm := range []string{"config-settings", "config-extra"} {
		if k.configMap(cm) != nil {
			t.Errorf("ConfigMap %s exists after the failed install", cm)
		}
	}
	// Rolled back: no release and none of the chart's objects remain.
	k.ns += "-bad"
	if n := k.helmReleases("bad"); n != 0 {
		t.Errorf("%d release records of the failed install remain", n)
	}
	if k.configMap("bad-settings") != nil {
		t.Error("ConfigMap bad-settings exists after the failed install")
	}
	if out, err := k.kubectl("get", "secret", "bad-db"); err == nil {
		t.Errorf("the failed release's Secret remains: %s", out)
	}
	k.ns = strings.TrimSuffix(k.ns, "-bad")
	if k.configMap("good-settings") == nil {
		t.Error("the independent release was not installed")
	}
}

func TestKubernetesSensitiveOutputNeverInPlainText(t *testing.T) {
	t.Parallel()
	k := newKubeWorld(t)
	sum := sha256.Sum256([]byte("knit-k8s-e2e-seed"))
	password := hex.EncodeToString(sum[:])
	secrets := map[string]string{"password": password, "token": k.c.Token}
	// app waits for approval, so that its sealed plan is also kept in the
	// approvals folder.
	doc := k.clusterEnv("ksecret", 1, "")
	doc = strings.Replace(doc, "    - name: config\n", "      autoApprove: false\n    - name: config\n", 1)
	k.write(map[string]string{"env.yaml": doc})

	var seen []string
	check := func(args []string, r result) {
		t.Helper()
		seen = append(seen, r.stdout+r.stderr)
		for what, s := range secrets {
			if strings.Contains(r.stdout+r.stderr, s) {
				t.Errorf("knit %s printed the %s", strings.Join(args, " "), what)
			}
		}
	}
	for _, args := range [][]string{
		{"apply", "-f", "env.yaml"},
		{"apply", "-f", "env.yaml", "-o", "json"},
	} {
		r := k.knit(args...)
		if r.code != 3 {
			t.Fatalf("knit %s: exit %d, want 3 (app awaits approval)\n%s\n%s", strings.Join(args, " "), r.code, r.stdout, r.stderr)
		}
		check(args, r)
	}
	for _, args := range [][]string{
		{"approvals", "qa/ksecret"},
		{"approvals", "qa/ksecret", "-o", "json"},
		{"approve", "qa/ksecret", "app", "--reason", "ship it"},
		{"plan", "-f", "env.yaml"},
		{"plan", "-f", "env.yaml", "-o", "json"},
		{"apply", "-f", "env.yaml"},
		{"apply", "-f", "env.yaml", "--refresh", "-o", "json"},
		{"drift", "qa/ksecret"},
		{"drift", "qa/ksecret", "-o", "json"},
		{"output", "qa/ksecret"},
		{"output", "qa/ksecret", "-o", "json"},
		{"output", "qa/ksecret", "cluster", "kubeconfig"},
		{"logs", "qa/ksecret", "cluster"},
		{"logs", "qa/ksecret", "app"},
		{"logs", "qa/ksecret", "config"},
		{"status", "qa/ksecret", "-o", "json"},
		{"history", "qa/ksecret", "-o", "json"},
		{"audit", "qa/ksecret", "-o", "json"},
	} {
		check(args, k.ok(args...))
	}
	if !strings.Contains(strings.Join(seen, ""), "hello, from terraform") {
		t.Error("the non-sensitive greeting is shown nowhere")
	}
	// The chart got the real value.
	if v := k.mustKubectl("get", "secret", "app-db", "-o", "jsonpath={.data.password}"); v != base64.StdEncoding.EncodeToString([]byte(password)) {
		t.Errorf("the chart's Secret holds %q, not the Terraform output", v)
	}

	if _, err := os.Stat(filepath.Join(k.dataDir, "approvals")); err != nil {
		t.Errorf("no plan was kept for approval: %v", err)
	}
	// Nowhere in the data dir: database, state, saved plans (approvals
	// included), work dirs, logs. The walk sees plain text: the non-sensitive greeting is found in it.
	const greeting = "hello, from terraform"
	texts := []string{greeting}
	for _, v := range secrets {
		texts = append(texts, v)
	}
	holding, checked := testtools.FilesHolding(t, k.dataDir, texts...)
	for what, v := range secrets {
		for _, rel := range holding[v] {
			t.Errorf("%s holds the %s in plain text", rel, what)
		}
	}
	control := len(holding[greeting])
	if checked < 10 || (control == 0 && k.dsn() == "") { // on PostgreSQL the greeting is in no file
		t.Errorf("%d files checked, %d of them holding the non-sensitive greeting: the walk proves nothing", checked, control)
	}
}

// TestKubernetesComponentsRunInKnitKube: knit finds knit-kube beside its
// own binary; without one, only the helm and manifests components fail,
// saying how to get it, and the rest of the environment goes on.
func TestKubernetesComponentsRunInKnitKube(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	var v struct{ KubeRunner string }
	if err := json.Unmarshal([]byte(w.ok("version", "-o", "json").stdout), &v); err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(filepath.Dir(knitBin), "knit-kube"); v.KubeRunner != want {
		t.Errorf("kube runner %q, want %q beside knit", v.KubeRunner, want)
	}

	w.write(map[string]string{"manifests/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cm}\ndata: {a: b}\n"})
	w.writeEnv(envFile("kube",
		"    - {name: cm, type: manifests, manifests: {path: ./manifests}}\n",
		"    - {name: hello, type: script, script: {apply: \"true\"}}\n",
	))
	r := w.knitWith([]string{"KNIT_KUBE_RUNNER=" + w.path("no-such-knit-kube")}, "apply", "-f", "env.yaml", "-o", "json")
	if r.code == 0 {
		t.Fatalf("apply without a kube runner succeeded:\n%s", r.stdout)
	}
	got := componentStatuses(t, r.stdout)
	if got["hello"] != "applied" || got["cm"] != "failed" {
		t.Errorf("statuses %v", got)
	}
	if !strings.Contains(r.stdout, "no-such-knit-kube") {
		t.Errorf("the failure does not name the missing runner:\n%s", r.stdout)
	}
}
