package e2e

import (
	"strconv"
	"strings"
	"testing"
)

// A Helm component goes back to the previous release revision's chart and
// values: its check fails after an upgrade (the replica count it checks is
// marked bad), and the rollback upgrades the release again with the good
// revision's values, a new Helm revision of the old chart and values.
func TestRollbackOfAHelmRelease(t *testing.T) {
	t.Parallel()
	k := newKubeWorld(t)
	k.write(map[string]string{"bad-replicas": "2\n"})
	env := func(replicas int) string {
		doc := k.clusterEnv("helmback", replicas, "")
		doc = strings.Replace(doc, "  autoApprove: true\n", "  autoApprove: true\n  rollout: {onFailure: rollback}\n", 1)
		check := `      health:
        - name: replicas-ok
          command: "! grep -qx ` + strconv.Itoa(replicas) + ` ` + k.path("bad-replicas") + `"
`
		anchor := "        - {name: settings, from: \"ConfigMap/app-settings:.data.greeting\"}\n"
		return strings.Replace(doc, anchor, anchor+check, 1)
	}
	k.write(map[string]string{"env.yaml": env(1)})
	k.ok("apply", "-f", "env.yaml")
	revision := func() string { return strings.TrimSpace(k.ok("output", "qa/helmback", "app", "revision").stdout) }
	if got := revision(); got != "1" {
		t.Fatalf("first Helm revision: %q", got)
	}

	k.write(map[string]string{"env.yaml": env(2)})
	r := k.knit("apply", "-f", "env.yaml")
	if r.code != 1 || !strings.Contains(r.stderr, "app/replicas-ok") || !strings.Contains(r.stderr, "rolling qa/helmback back") {
		t.Fatalf("apply of a bad replica count: exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	if !strings.Contains(r.stdout, "rollback qa/helmback") || !strings.Contains(r.stdout, "succeeded") {
		t.Errorf("the rollback:\n%s", r.stdout)
	}
	if v := k.mustKubectl("get", "deployment", "app", "-o", "jsonpath={.spec.replicas}"); v != "1" {
		t.Errorf("replicas after the rollback: %s, want 1", v)
	}
	// Install, the bad upgrade, the upgrade back: three Helm revisions.
	if got := revision(); got != "3" {
		t.Errorf("Helm revision after the rollback: %q, want 3", got)
	}
	if n := k.helmReleases("app"); n != 3 {
		t.Errorf("Helm keeps %d release records, want 3", n)
	}
}
