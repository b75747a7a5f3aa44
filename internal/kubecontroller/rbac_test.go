package kubecontroller_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"knit.dev/knit/internal/knit"
	"knit.dev/knit/internal/kubecontroller"
	"knit.dev/knit/internal/kubetest"
)

// webChart is a chart of one ConfigMap, as two ConfigMaps of files
// (Chart.yaml, and templates/), for spec.sources.
var webChart = map[string]map[string]string{
	"web-chart":     {"Chart.yaml": "apiVersion: v2\nname: web\nversion: 0.1.0\n"},
	"web-templates": {"config.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}-config\ndata:\n  greeting: hello\n"},
}

// helmEnv is an Environment whose helm component installs webChart into
// namespace APPS, with no kubeconfig of its own: it acts as the
// controller does.
const helmEnv = `apiVersion: knit.dev/v1
kind: Environment
metadata: {name: NAME}
spec:
  teamName: qa
  envName: NAME
  autoApprove: true
  sources: [{configMap: web-chart, path: charts/web}, {configMap: web-templates, path: charts/web/templates}]
  components:
    - name: web
      type: helm
      chart: {path: ./charts/web, namespace: APPS, release: NAME}
`

// appRule is what controller.rbac.rules grants in the test: the
// ConfigMaps the chart makes and the Secrets Helm keeps its release in.
var appRule = map[string]any{"apiGroups": []any{""}, "resources": []any{"configmaps", "secrets"},
	"verbs": []any{"get", "list", "watch", "create", "update", "patch", "delete"}}

// TestChartRBACLetsTheControllerDoItsJob: the controller runs as the
// ServiceAccount knit's chart makes, with only the chart's RBAC. With
// controller.rbac.rules it installs a helm component (no kubeconfig of its
// own) into another namespace and tears it down when the Environment is
// deleted. When its rights no longer let it tear down, it tries
// MaxTeardownAttempts times, says so in Stalled and stops; then
// knit.dev/retry-teardown (rights fixed) tears down, and
// knit.dev/skip-teardown releases the object leaving the resources, audited
// in knit, but only from a user RBAC lets skip-teardown, naming
// themselves.
func TestChartRBACLetsTheControllerDoItsJob(t *testing.T) {
	var apps, release string
	h := startWith(t, func(h *harness, o *kubecontroller.Options) {
		apps = h.cluster.Namespace(t)
		release = "knit-" + h.ns
		h.installChartRBAC(release, []any{appRule})
		h.installSkipTeardownPolicy()
		sa := "system:serviceaccount:" + h.ns + ":" + release
		cfg := rest.CopyConfig(h.cluster.Config)
		cfg.Impersonate = rest.ImpersonationConfig{UserName: sa}
		h.ctlConfig = cfg
		// A component without a kubeconfig reaches the cluster as knit's
		// process does: in a pod, its ServiceAccount; here, the same.
		kc := filepath.Join(t.TempDir(), "sa.kubeconfig")
		body := strings.Replace(string(kubetest.Kubeconfig(h.cluster.Server, h.cluster.CA, h.cluster.Token)),
			"user: {token: ", "user: {as: \""+sa+"\", token: ", 1)
		if err := os.WriteFile(kc, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		t.Setenv("KUBECONFIG", kc)
		o.PolicyGrace = time.Millisecond
	})
	ctx := context.Background()
	for name, files := range webChart {
		if err := h.c.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: h.ns}, Data: files}); err != nil {
			t.Fatal(err)
		}
	}
	env := func(name string) string { return strings.NewReplacer("NAME", name, "APPS", apps).Replace(helmEnv) }
	config := func(name string) error {
		var cm corev1.ConfigMap
		return h.c.Get(ctx, key(apps, name+"-config"), &cm)
	}

	// Installed and torn down with the chart's rights alone.
	h.apply(env("web"))
	h.waitEnv("web", "Ready=True", condIs(kubecontroller.CondReady, metav1.ConditionTrue))
	if err := config("web"); err != nil {
		t.Fatalf("the chart's ConfigMap in %s: %v", apps, err)
	}
	h.kubectl("delete", "-n", h.ns, "environment.knit.dev/web", "--wait=false")
	h.waitGone("web")
	if err := config("web"); !apierrors.IsNotFound(err) {
		t.Errorf("the chart's ConfigMap after the teardown: %v", err)
	}

	// Two more, then the rights to delete go: each teardown gives up.
	for _, n := range []string{"retried", "skipped"} {
		h.apply(env(n))
	}
	for _, n := range []string{"retried", "skipped"} {
		h.waitEnv(n, "Ready=True", condIs(kubecontroller.CondReady, metav1.ConditionTrue))
	}
	h.setAppVerbs(release, "get", "list", "watch", "create", "update", "patch")
	for _, n := range []string{"retried", "skipped"} {
		h.kubectl("delete", "-n", h.ns, "environment.knit.dev/"+n, "--wait=false")
	}
	for _, n := range []string{"retried", "skipped"} {
		e := h.waitEnv(n, "a teardown that gave up", func(e *kubecontroller.Environment) bool {
			_, r := cond(e, kubecontroller.CondStalled)
			return r == kubecontroller.ReasonTeardownFailed
		})
		c := meta.FindStatusCondition(e.Status.Conditions, kubecontroller.CondStalled)
		if e.Status.TeardownAttempts != kubecontroller.MaxTeardownAttempts || !strings.Contains(c.Message, "forbidden") ||
			!strings.Contains(c.Message, kubecontroller.SkipTeardownAnnotation) {
			t.Errorf("%s: %d attempts, Stalled: %s", n, e.Status.TeardownAttempts, c.Message)
		}
	}

	// Only bob, whom RBAC lets skip-teardown, may release one, and only
	// in his own name.
	for _, try := range []struct{ user, value string }{{"alice", "alice"}, {"alice", "bob"}, {"bob", "alice"}} {
		err := h.annotateAs(try.user, "skipped", kubecontroller.SkipTeardownAnnotation, try.value)
		if !apierrors.IsForbidden(err) && !apierrors.IsInvalid(err) {
			t.Errorf("%s set %s=%s: %v", try.user, kubecontroller.SkipTeardownAnnotation, try.value, err)
		}
	}
	if err := h.annotateAs("bob", "skipped", kubecontroller.SkipTeardownAnnotation, "bob"); err != nil {
		t.Fatal(err)
	}
	h.waitGone("skipped")
	if err := config("skipped"); err != nil {
		t.Errorf("a skipped teardown removed the chart's ConfigMap: %v", err)
	}
	page, err := knit.NewRecords(h.k).Audit(ctx, knit.AuditFilter{Env: "qa/skipped", Limit: 50})
	if err != nil {
		t.Fatal(err)
	}
	var audited bool
	for _, ev := range page.Items {
		audited = audited || (ev.Action == "skip-teardown" && ev.Actor == "kubernetes-user:bob")
	}
	if !audited {
		t.Errorf("no skip-teardown by bob in the audit trail: %+v", page.Items)
	}

	// The rights back, a retry tears the other down for real.
	h.setAppVerbs(release, "get", "list", "watch", "create", "update", "patch", "delete")
	h.kubectl("annotate", "-n", h.ns, "environment.knit.dev/retried", kubecontroller.RetryTeardownAnnotation+"=1")
	h.waitGone("retried")
	if err := config("retried"); !apierrors.IsNotFound(err) {
		t.Errorf("the chart's ConfigMap after the retried teardown: %v", err)
	}
}

// installChartRBAC applies, from knit's chart with the controller on and
// controller.rbac.rules, the ServiceAccount and RBAC of release (its
// cluster-scoped objects removed after the test: the API server is shared).
func (h *harness) installChartRBAC(release string, rules []any) {
	h.t.Helper()
	objs := docs(h.t, renderAs(h.t, release, h.ns, map[string]any{"controller": map[string]any{"enabled": true, "namespace": h.ns,
		"teamForNamespace": map[string]any{h.ns: "qa"}, "rbac": map[string]any{"rules": rules}}}))
	var parts []string
	for _, k := range []string{"ServiceAccount/" + release, "ClusterRole/" + release + "-controller", "ClusterRoleBinding/" + release + "-controller"} {
		if objs[k] == "" {
			h.t.Fatalf("no %s in the chart", k)
		}
		parts = append(parts, objs[k])
	}
	path := filepath.Join(h.t.TempDir(), "rbac.yaml")
	if err := os.WriteFile(path, []byte(strings.Join(parts, "\n---\n")), 0o600); err != nil {
		h.t.Fatal(err)
	}
	h.kubectl("apply", "--server-side", "-n", h.ns, "-f", path)
	h.t.Cleanup(func() { h.kubectlMay("delete", "-n", h.ns, "-f", path) })
}

// setAppVerbs sets the verbs of the controller's last ClusterRole rule
// (appRule's).
func (h *harness) setAppVerbs(release string, verbs ...string) {
	h.t.Helper()
	var role rbacv1.ClusterRole
	if err := h.c.Get(context.Background(), client.ObjectKey{Name: release + "-controller"}, &role); err != nil {
		h.t.Fatal(err)
	}
	role.Rules[len(role.Rules)-1].Verbs = verbs
	if err := h.c.Update(context.Background(), &role); err != nil {
		h.t.Fatal(err)
	}
}

// installSkipTeardownPolicy installs the policy the controller trusts for
// knit.dev/skip-teardown, bound to h's namespace; lets kubetest.Users edit
// Environments there and bob skip-teardown; and waits until the API
// server enforces it.
func (h *harness) installSkipTeardownPolicy() {
	h.t.Helper()
	ctx := context.Background()
	body, err := kubecontroller.SkipTeardownPolicyYAML()
	if err != nil {
		h.t.Fatal(err)
	}
	// Bound to this namespace only (the test API server is shared).
	var pol admissionv1.ValidatingAdmissionPolicy
	var bind admissionv1.ValidatingAdmissionPolicyBinding
	pols := docs(h.t, string(body))
	for k, o := range map[string]client.Object{"ValidatingAdmissionPolicy/" + kubecontroller.SkipTeardownPolicy: &pol,
		"ValidatingAdmissionPolicyBinding/" + kubecontroller.SkipTeardownPolicy: &bind} {
		if err := yaml.Unmarshal([]byte(pols[k]), o); err != nil {
			h.t.Fatal(err)
		}
	}
	bind.Spec.MatchResources = &admissionv1.MatchResources{NamespaceSelector: &metav1.LabelSelector{
		MatchLabels: map[string]string{"kubernetes.io/metadata.name": h.ns}}}
	for _, o := range []client.Object{&pol, &bind} {
		if err := h.c.Create(ctx, o); err != nil {
			h.t.Fatal(err)
		}
		h.t.Cleanup(func() { h.c.Delete(context.Background(), o) })
	}
	edit := []string{"get", "list", "create", "update", "patch"}
	h.grant("env-editors", rbacv1.Subject{Kind: "Group", Name: kubetest.UsersGroup},
		rbacv1.PolicyRule{APIGroups: []string{"knit.dev"}, Resources: []string{"environments"}, Verbs: edit})
	h.grant("skip-teardown", rbacv1.Subject{Kind: "User", Name: "bob"},
		rbacv1.PolicyRule{APIGroups: []string{"knit.dev"}, Resources: []string{"environments"}, Verbs: []string{"skip-teardown"}})
	alice := h.userClient("alice")
	waitFor(h.t, "the skip-teardown policy in force", func() bool {
		probe := &kubecontroller.Environment{ObjectMeta: metav1.ObjectMeta{Name: "probe", Namespace: h.ns,
			Annotations: map[string]string{kubecontroller.SkipTeardownAnnotation: "alice"}}, Spec: kubecontroller.EnvironmentSpec{}}
		err := alice.Create(ctx, probe, client.DryRunAll)
		return apierrors.IsForbidden(err) || apierrors.IsInvalid(err)
	})
	// Objects created from now on are later than the policy by the API
	// server's clock (creation times are in seconds).
	time.Sleep(1100 * time.Millisecond)
}

// grant binds a Role of rule in h's namespace to who.
func (h *harness) grant(name string, who rbacv1.Subject, rule rbacv1.PolicyRule) {
	h.t.Helper()
	role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: h.ns}, Rules: []rbacv1.PolicyRule{rule}}
	rb := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: h.ns},
		RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: name},
		Subjects: []rbacv1.Subject{who}}
	for _, o := range []client.Object{role, rb} {
		if err := h.c.Create(context.Background(), o); err != nil {
			h.t.Fatal(err)
		}
	}
}

// annotateAs sets annotation k=v on Environment name as user.
func (h *harness) annotateAs(user, name, k, v string) error {
	patch := []byte(fmt.Sprintf(`{"metadata":{"annotations":{%q:%q}}}`, k, v))
	e := &kubecontroller.Environment{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: h.ns}}
	return h.userClient(user).Patch(context.Background(), e, client.RawPatch("application/merge-patch+json", patch))
}
