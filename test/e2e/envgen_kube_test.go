package e2e

import (
	"context"
	"encoding/base64"
	"fmt"
	"os"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"knit.dev/knit/internal/kubetest"
)

// The seed's Argo CD setup, on knit: two "clusters" (two real API
// servers) are environments of a set exporting their kubeconfigs to team
// shop; an apps set generates one environment per cluster that installs
// a chart into it through the cluster's exported kubeconfig (issue 41,
// acceptance point 2).
func TestGitOpsAChartPerClusterThroughItsExportedKubeconfig(t *testing.T) {
	t.Parallel()
	k := newKubeWorld(t)
	other := kubetest.StartAnother(t)
	if _, err := other.Client.CoreV1().Namespaces().Create(context.Background(),
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: k.ns}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	if err := os.WriteFile(k.path("token2"), []byte(other.Token+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	el := func(name string, c *kubetest.Cluster, token string) string {
		return fmt.Sprintf("{name: %s, parameters: {server: %q, ca: %q, token_file: %q}}", name, c.Server, base64.StdEncoding.EncodeToString(c.CA), k.path(token))
	}
	files := map[string]string{
		"modules/cluster/main.tf": clusterModule,
		"templates/kcluster.yaml": `apiVersion: knit.dev/v1
kind: EnvironmentTemplate
metadata: {name: kcluster}
spec:
  parameters:
    - {name: server, type: string, required: true}
    - {name: ca, type: string, required: true}
    - {name: token_file, type: string, required: true}
  components:
    - name: cluster
      type: terraform
      module: {source: ../modules/cluster}
      outputs: [{name: kubeconfig, sensitive: true}, {name: greeting}, {name: password, sensitive: true}]
      variables:
        - {name: server, value: "${param.server}"}
        - {name: ca, value: "${param.ca}"}
        - {name: token_file, value: "${param.token_file}"}
        - {name: greeting, value: hello}
`,
		"templates/kapp.yaml": `apiVersion: knit.dev/v1
kind: EnvironmentTemplate
metadata: {name: kapp}
spec:
  parameters:
    - {name: cluster, type: string, required: true}
  components:
    - name: app
      type: helm
      kubeconfig: {valueFrom: {environment: "${param.cluster}", output: cluster.kubeconfig}}
      chart: {path: ../charts/app, namespace: ` + k.ns + `, values: {greeting: "${param.cluster}"}}
`,
		"envs/clusters.yaml": `apiVersion: knit.dev/v1
kind: EnvironmentSet
metadata: {name: clusters}
spec:
  teamName: platform
  envName: "{{ .name }}"
  autoApprove: true
  labels: {role: cluster}
  exports: [{output: cluster.kubeconfig, teams: [shop]}]
  template: {path: ../templates/kcluster.yaml}
  generators:
    - list: {elements: [` + el("k1", k.c, "token") + `, ` + el("k2", other, "token2") + `]}
`,
		"envs/apps.yaml": `apiVersion: knit.dev/v1
kind: EnvironmentSet
metadata: {name: apps}
spec:
  teamName: shop
  envName: "app-{{ .env.name }}"
  autoApprove: true
  template: {path: ../templates/kapp.yaml}
  parameters: {cluster: "{{ .env.team }}/{{ .env.name }}"}
  generators:
    - environments: {selector: {matchLabels: {role: cluster}}}
`,
	}
	for n, s := range appChart {
		files[n] = s
	}
	repo := newGitRepo(t, files)
	s := k.startServer(gitServerArgs(repo)...)
	for _, c := range []string{"k1", "k2"} {
		s.eventually("app-"+c+" applied", func() bool { e, _ := s.env("shop/app-" + c); return e.Status == "provisioned" })
	}
	// The chart's objects are in each API server, each with its cluster's values.
	for _, c := range []struct {
		name string
		c    *kubetest.Cluster
	}{{"k1", k.c}, {"k2", other}} {
		cs := c.c.Client
		cm, err := cs.CoreV1().ConfigMaps(k.ns).Get(context.Background(), "app-settings", metav1.GetOptions{})
		if err != nil || cm.Data["greeting"] != "platform/"+c.name {
			t.Errorf("%s: ConfigMap app-settings %v, %v; want greeting platform/%s", c.name, err, cm.Data, c.name)
		}
		if _, err := cs.AppsV1().Deployments(k.ns).Get(context.Background(), "app", metav1.GetOptions{}); err != nil {
			t.Errorf("%s: Deployment app: %v", c.name, err)
		}
		if _, err := cs.CoreV1().Services(k.ns).Get(context.Background(), "app", metav1.GetOptions{}); err != nil {
			t.Errorf("%s: Service app: %v", c.name, err)
		}
	}
	// The kubeconfigs (and so the tokens) are secrets in the consumer too:
	// in no answer of the API about the apps, their runs' events and
	// logs, nor in the server's log.
	var seen strings.Builder
	for _, env := range []string{"shop/app-k1", "shop/app-k2"} {
		for _, p := range []string{"", "/outputs", "/runs", "/revisions", "/components/app/logs"} {
			seen.WriteString(s.get("/api/v1/environments/" + env + p))
		}
		for _, r := range s.runs(env) {
			seen.WriteString(s.get("/api/v1/runs/" + r.ID))
			seen.WriteString(s.get("/api/v1/runs/" + r.ID + "/events"))
		}
	}
	for name, tok := range map[string]string{"first": k.c.Token, "second": other.Token} {
		if strings.Contains(seen.String(), tok) {
			t.Errorf("the %s cluster's token is in the API's answers about the apps", name)
		}
		if strings.Contains(s.logText(), tok) {
			t.Errorf("the %s cluster's token is in the server's log", name)
		}
	}
}
