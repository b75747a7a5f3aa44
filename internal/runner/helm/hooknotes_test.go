package helm

import (
	"strings"
	"testing"

	"helm.sh/helm/v3/pkg/release"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// TestHookNotesNameClusterScopedHooksWithoutANamespace: a hook of a
// cluster-scoped kind is named without the release's namespace; one that
// names its own namespace is named there.
func TestHookNotesNameClusterScopedHooksWithoutANamespace(t *testing.T) {
	hooks := []*release.Hook{
		{Kind: "ClusterRole", Name: "admission", Events: []release.HookEvent{release.HookPreInstall},
			Manifest: "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata:\n  name: admission\n"},
		{Kind: "Job", Name: "patch", Events: []release.HookEvent{release.HookPostInstall},
			Manifest: "apiVersion: batch/v1\nkind: Job\nmetadata:\n  name: patch\n"},
		{Kind: "ConfigMap", Name: "elsewhere", Events: []release.HookEvent{release.HookPreInstall},
			Manifest: "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: elsewhere\n  namespace: other\n"},
		{Kind: "Job", Name: "upgrade-only", Events: []release.HookEvent{release.HookPreUpgrade},
			Manifest: "apiVersion: batch/v1\nkind: Job\nmetadata:\n  name: upgrade-only\n"},
	}
	namespaced := func(gvk schema.GroupVersionKind) bool { return gvk.Kind != "ClusterRole" }
	got := strings.Join(hookNotes(hooks, "monitoring", namespaced, release.HookPreInstall, release.HookPostInstall), "\n")
	for _, want := range []string{"pre-install hook ClusterRole/admission runs", "post-install hook Job/monitoring/patch runs",
		"pre-install hook ConfigMap/other/elsewhere runs"} {
		if !strings.Contains(got, want) {
			t.Errorf("no %q in\n%s", want, got)
		}
	}
	if strings.Contains(got, "monitoring/admission") || strings.Contains(got, "upgrade-only") {
		t.Errorf("notes:\n%s", got)
	}
}
