package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestAChartWithSubchartsSchemaAndHooksIsUpToDateOnEveryNoOpApply: an
// umbrella chart of five subcharts, with a values schema and a hook, is up
// to date on each no-op apply after the first (its fingerprint once
// changed with the order Helm's loader added the subcharts in, so most
// no-op applies planned it again).
func TestAChartWithSubchartsSchemaAndHooksIsUpToDateOnEveryNoOpApply(t *testing.T) {
	t.Parallel()
	k := newKubeWorld(t)
	if err := os.WriteFile(k.path("kubeconfig"), k.c.Kubeconfig, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.CopyFS(k.path("charts/umbrella"), os.DirFS(filepath.Join(repo, "internal", "runner", "helm", "testdata", "umbrella"))); err != nil {
		t.Fatal(err)
	}
	k.write(map[string]string{"env.yaml": fmt.Sprintf(`apiVersion: knit.dev/v1
kind: Environment
metadata: {name: umbrella}
spec:
  teamName: qa
  envName: umbrella
  autoApprove: true
  kubeconfig: {path: ./kubeconfig}
  components:
    - name: stack
      type: helm
      chart: {path: ./charts/umbrella, namespace: %s-u, values: {greeting: hi}}
`, k.ns)})
	k.ok("validate", "-f", "env.yaml")
	k.ok("apply", "-f", "env.yaml")
	for i := range 3 {
		out := k.ok("apply", "-f", "env.yaml").stdout
		if !strings.Contains(out, "up to date") {
			t.Fatalf("no-op apply %d is not up to date:\n%s", i+1, out)
		}
	}
	k.mustKubectl("get", "configmap", "-n", k.ns+"-u", "stack-epsilon", "stack-hook") // the subchart's, the hook's
}
