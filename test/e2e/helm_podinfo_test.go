package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// podinfoEnv renders an environment with podinfo's real chart (vendored in
// testdata/podinfo) released into namespace ns.
func podinfoEnv(ns string, replicas int, color string) string {
	return fmt.Sprintf(`apiVersion: knit.dev/v1
kind: Environment
metadata: {name: kpodinfo}
spec:
  teamName: qa
  envName: kpodinfo
  autoApprove: true
  kubeconfig: {path: ./kubeconfig}
  components:
    - name: podinfo
      type: helm
      chart:
        path: ./charts/podinfo
        namespace: %s
        values: {replicaCount: %d, ui: {color: %q}}
`, ns, replicas, color)
}

// TestHelmPodinfoReadableDiffAndNothingLeftBehind: a podinfo value change
// reads old → new in `knit plan` and its JSON, and teardown removes the
// namespace knit created for the release, waiting until it is gone.
func TestHelmPodinfoReadableDiffAndNothingLeftBehind(t *testing.T) {
	t.Parallel()
	k := newKubeWorld(t)
	if err := os.WriteFile(k.path("kubeconfig"), k.c.Kubeconfig, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.CopyFS(k.path("charts/podinfo"), os.DirFS(filepath.Join(repo, "testdata", "podinfo", "podinfo"))); err != nil {
		t.Fatal(err)
	}
	ns := k.ns + "-pi" // nobody has created it: knit will
	k.write(map[string]string{"env.yaml": podinfoEnv(ns, 1, "#34577c")})
	k.ok("apply", "-f", "env.yaml")

	k.write(map[string]string{"env.yaml": podinfoEnv(ns, 3, "#ff0000")})
	r := k.knit("plan", "-f", "env.yaml", "--detailed-exitcode")
	if r.code != 2 {
		t.Fatalf("plan: exit %d, want 2\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	for _, want := range []string{
		"replicaCount: 1 → 3",
		"ui.color: #34577c → #ff0000",
		"Deployment/" + ns + "/podinfo",
		"spec.replicas: 1 → 3",
		"spec.template.spec.containers[podinfo].env[PODINFO_UI_COLOR]: #34577c → #ff0000",
	} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("knit plan does not show %q:\n%s", want, r.stdout)
		}
	}
	if strings.Contains(r.stdout, "revision 0") {
		t.Errorf("plan header says revision 0:\n%s", r.stdout)
	}
	r = k.ok("plan", "-f", "env.yaml", "-o", "json")
	if want := `"path": "spec.template.spec.containers[podinfo].env[PODINFO_UI_COLOR]"`; !strings.Contains(r.stdout, want) ||
		!strings.Contains(r.stdout, `"old": "#34577c"`) || !strings.Contains(r.stdout, `"new": "#ff0000"`) {
		t.Errorf("plan -o json lacks the value change %s:\n%s", want, r.stdout)
	}

	k.ok("teardown", "qa/kpodinfo", "--auto-approve")
	if _, err := k.c.Client.CoreV1().Namespaces().Get(context.Background(), ns, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("namespace %s, created by knit for podinfo, after teardown: %v", ns, err)
	}
	if logs := k.ok("logs", "qa/kpodinfo", "podinfo").stdout; !strings.Contains(logs, "deleted namespace "+ns) {
		t.Errorf("podinfo's log does not record the namespace's removal:\n%s", logs)
	}
}
