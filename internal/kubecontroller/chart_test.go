package kubecontroller_test

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	appsv1 "k8s.io/api/apps/v1"
	"sigs.k8s.io/yaml"

	"knit.dev/knit/internal/cli"
	"knit.dev/knit/internal/kubecli"
	"knit.dev/knit/internal/kubetest"
	"knit.dev/knit/internal/testtools"
)

// render renders deploy/helm/knit with values as `helm install --dry-run`
// does, CRDs included, with the Helm SDK.
func render(t *testing.T, ns string, values map[string]any) string {
	t.Helper()
	return renderAs(t, "knit", ns, values)
}

// renderAs is render with another release name.
func renderAs(t *testing.T, release, ns string, values map[string]any) string {
	t.Helper()
	ch, err := loader.Load(filepath.Join(testtools.ModuleRoot(t), "deploy", "helm", "knit"))
	if err != nil {
		t.Fatal(err)
	}
	in := action.NewInstall(&action.Configuration{})
	in.DryRun, in.ClientOnly, in.IncludeCRDs = true, true, true
	in.ReleaseName, in.Namespace = release, ns
	in.KubeVersion = &chartutil.KubeVersion{Version: "v1.31.14", Major: "1", Minor: "31"}
	rel, err := in.Run(ch, values)
	if err != nil {
		t.Fatalf("render the chart: %v", err)
	}
	return rel.Manifest
}

// docs splits a manifest into its objects, by kind/name.
func docs(t *testing.T, manifest string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, d := range strings.Split(manifest, "\n---") {
		var h struct {
			Kind     string
			Metadata struct{ Name string }
		}
		if err := yaml.Unmarshal([]byte(d), &h); err != nil {
			t.Fatalf("%v in\n%s", err, d)
		}
		if h.Kind != "" {
			out[h.Kind+"/"+h.Metadata.Name] = d
		}
	}
	return out
}

// TestHelmChart: the chart renders knit serve as a Deployment of N
// replicas reading the store's DSN from the Secret (never a literal), a
// Service, a ServiceAccount and the CRDs; the controller and its RBAC only
// when controller.enabled. Every object passes a server-side dry-run apply
// on the real API server, and the controller's ServiceAccount may do what
// the controller does (and not create approvals).
func TestHelmChart(t *testing.T) {
	cluster := kubetest.Start(t)
	h := &harness{t: t, cluster: cluster}
	ns := cluster.Namespace(t)

	plain := docs(t, render(t, ns, map[string]any{"server": map[string]any{"replicas": 3}, "secret": map[string]any{"name": "knit-db"}}))
	for _, k := range []string{"Deployment/knit", "Service/knit", "ServiceAccount/knit",
		"CustomResourceDefinition/environments.knit.dev", "CustomResourceDefinition/environments.stable.cloudknit.io",
		"CustomResourceDefinition/environmentapprovals.knit.dev"} {
		if plain[k] == "" {
			t.Errorf("no %s in the chart", k)
		}
	}
	if plain["Deployment/knit-controller"] != "" || plain["ClusterRole/knit-controller"] != "" {
		t.Error("the controller is rendered although controller.enabled is false")
	}
	var dep appsv1.Deployment
	if err := yaml.Unmarshal([]byte(plain["Deployment/knit"]), &dep); err != nil {
		t.Fatal(err)
	}
	if *dep.Spec.Replicas != 3 {
		t.Errorf("replicas %d", *dep.Spec.Replicas)
	}
	c := dep.Spec.Template.Spec.Containers[0]
	var dsn bool
	for _, e := range c.Env {
		if e.Name == "KNIT_STORE_DSN" {
			dsn = e.Value == "" && e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil &&
				e.ValueFrom.SecretKeyRef.Name == "knit-db" && e.ValueFrom.SecretKeyRef.Key == "dsn"
		}
	}
	if !dsn {
		t.Errorf("KNIT_STORE_DSN does not come from Secret knit-db: %+v", c.Env)
	}
	if strings.Join(c.Args[:3], " ") != "serve --listen 0.0.0.0:7070" {
		t.Errorf("args %q", c.Args)
	}

	full := render(t, ns, map[string]any{"controller": map[string]any{"enabled": true, "namespace": ns,
		"teamForNamespace": map[string]any{"payments": "pay", "shop": "qa"}, "defaultTeam": "ops", "allowAdopt": []any{"platform"}}})
	withCtl := docs(t, full)
	var ctl appsv1.Deployment
	if err := yaml.Unmarshal([]byte(withCtl["Deployment/knit-controller"]), &ctl); err != nil {
		t.Fatal(err)
	}
	if args := strings.Join(ctl.Spec.Template.Spec.Containers[0].Args, " "); !strings.Contains(args,
		"--team-for-namespace payments=pay --team-for-namespace shop=qa --default-team ops --allow-adopt platform") {
		t.Errorf("the controller's tenancy flags: %s", args)
	}
	for _, k := range []string{"Deployment/knit-controller", "ClusterRole/knit-controller", "ClusterRoleBinding/knit-controller", "Role/knit-leader-election",
		"ValidatingAdmissionPolicy/knit-approvers", "ValidatingAdmissionPolicyBinding/knit-approvers"} {
		if withCtl[k] == "" {
			t.Errorf("no %s with controller.enabled", k)
		}
	}
	path := filepath.Join(t.TempDir(), "knit.yaml")
	if err := os.WriteFile(path, []byte(full), 0o600); err != nil {
		t.Fatal(err)
	}
	out := h.kubectl("apply", "--server-side", "--dry-run=server", "-n", ns, "-f", path)
	if !strings.Contains(out, "deployment.apps/knit-controller serverside-applied (server dry run)") {
		t.Errorf("dry run:\n%s", out)
	}

	// The CRDs for real, with knit controller install-crds (the can-i
	// checks need the resources to exist).
	var stdout, stderr bytes.Buffer
	if code := cli.RunWith(context.Background(), []string{"controller", "install-crds", "--kubeconfig", cluster.KubeconfigPath},
		strings.NewReader(""), &stdout, &stderr, kubecli.Kube()); code != 0 {
		t.Fatalf("install-crds: exit %d\n%s", code, stderr.String())
	}
	if got := strings.Count(stdout.String(), " established\n"); got != 3 {
		t.Errorf("install-crds:\n%s", stdout.String())
	}

	// The RBAC for real: what the controller does is allowed, no more.
	rbac := filepath.Join(t.TempDir(), "rbac.yaml")
	var parts []string
	for _, k := range []string{"ServiceAccount/knit", "ClusterRole/knit-controller", "ClusterRoleBinding/knit-controller", "Role/knit-leader-election", "RoleBinding/knit-leader-election"} {
		parts = append(parts, withCtl[k])
	}
	if err := os.WriteFile(rbac, []byte(strings.Join(parts, "\n---\n")), 0o600); err != nil {
		t.Fatal(err)
	}
	h.kubectl("apply", "--server-side", "-n", ns, "-f", rbac)
	sa := "system:serviceaccount:" + ns + ":knit"
	for _, verb := range [][]string{
		{"patch", "environments.knit.dev"}, {"watch", "environments.stable.cloudknit.io"},
		{"patch", "environments.knit.dev", "--subresource=status"}, {"update", "environments.knit.dev", "--subresource=finalizers"},
		{"list", "environmentapprovals.knit.dev"}, {"patch", "environmentapprovals.knit.dev", "--subresource=status"},
		{"get", "configmaps"}, {"update", "leases.coordination.k8s.io"},
		{"get", "validatingadmissionpolicies.admissionregistration.k8s.io"}, {"get", "validatingadmissionpolicybindings.admissionregistration.k8s.io"},
		{"get", "namespaces"},
	} {
		if got := canI(h, ns, sa, verb...); got != "yes" {
			t.Errorf("the controller may not %v: %s", verb, got)
		}
	}
	for _, verb := range [][]string{{"create", "environmentapprovals.knit.dev"}, {"list", "secrets"}, {"update", "configmaps"},
		{"update", "validatingadmissionpolicies.admissionregistration.k8s.io"}, {"delete", "validatingadmissionpolicybindings.admissionregistration.k8s.io"}} {
		if got := canI(h, ns, sa, verb...); got != "no" {
			t.Errorf("the controller may %v: %s", verb, got)
		}
	}
}

// canI asks the API server whether sa may do verb on resource in ns.
func canI(h *harness, ns, sa string, verb ...string) string {
	h.t.Helper()
	cmd := []string{"auth", "can-i", "-n", ns, "--as", sa}
	cmd = append(cmd, verb...)
	c := exec.Command(h.cluster.Kubectl, append([]string{"--kubeconfig", h.cluster.KubeconfigPath}, cmd...)...)
	out, _ := c.Output() // "no" exits 1
	return strings.TrimSpace(string(out))
}
