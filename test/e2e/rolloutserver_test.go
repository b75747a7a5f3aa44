package e2e

import (
	"encoding/json"
	"os"
	"strings"
	"testing"
)

// knit rollout status|promote|abort|retry through a real knit serve
// (--server, real tofu): a rollout paused at its pause is shown as the
// server sees it, promoted there (the server runs the rest of it), and
// the next version's is aborted with a reason and retried from its first
// step; a viewer reads but cannot steer, each action is audited as the
// token, and every answer is the local command's.
func TestRolloutCommandsThroughTheServer(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	url, conf := versions(t, ""), w.path("router.conf")
	steps := "          - setWeight: 10\n          - pause: {}\n          - setWeight: 50\n"
	w.write(map[string]string{"app/main.tf": canaryAppModule, "router/main.tf": canaryRouterModule, "env.yaml": canaryEnv(url, "1", conf, steps)})
	w.ok("apply", "-f", "env.yaml")
	w.write(map[string]string{"env.yaml": canaryEnv(url, "2", conf, steps)})
	if r := w.knit("apply", "-f", "env.yaml"); r.code != 3 {
		t.Fatalf("apply up to the pause: exit %d\n%s", r.code, r.stderr)
	}
	s := w.startServer()
	viewer := strings.TrimSpace(w.ok("token", "create", "vic", "--role", "viewer").stdout)
	remote := func(token string, args ...string) result {
		t.Helper()
		return w.knitWith([]string{"KNIT_SERVER=" + s.url, "KNIT_TOKEN=" + token}, args...)
	}
	status := func() rolloutStatus {
		t.Helper()
		r := remote(viewer, "rollout", "status", "shop/canary", "-o", "json")
		var st rolloutStatus
		if err := json.Unmarshal([]byte(r.stdout), &st); r.code != 0 || err != nil {
			t.Fatalf("rollout status through the server: exit %d %v\n%s\n%s", r.code, err, r.stdout, r.stderr)
		}
		return st
	}
	if r, l := remote(viewer, "rollout", "status", "shop/canary"), w.knit("rollout", "status", "shop/canary"); r.code != 0 || r.stdout != l.stdout ||
		!strings.Contains(r.stdout, "paused at step 1 of 3, weight 10") || !strings.Contains(r.stdout, "canary: weight 10 → [pause until promoted] → weight 50") {
		t.Fatalf("status through the server (exit %d):\n%s\nlocally:\n%s", r.code, r.stdout, l.stdout)
	}
	if r := remote(viewer, "rollout", "promote", "shop/canary"); r.code != 1 || !strings.Contains(r.stderr, "the server refused") {
		t.Fatalf("a viewer promoting: exit %d\n%s", r.code, r.stderr)
	}
	if r := remote(s.token, "rollout", "retry", "shop/canary"); r.code != 1 || !strings.Contains(r.stderr, "only a failed or aborted rollout is retried") {
		t.Fatalf("a retry of a paused rollout: exit %d\n%s", r.code, r.stderr)
	}

	if r := remote(s.token, "rollout", "promote", "shop/canary", "--reason", "looks good"); r.code != 0 || !strings.Contains(r.stderr, "run ") {
		t.Fatalf("promote through the server: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	s.eventually("the server carries the rollout to its end", func() bool { return status().State == "succeeded" })
	w.canaryEndsAt(conf, "2")

	// Version 3: abort through the server, then retry from step 1.
	w.write(map[string]string{"env.yaml": canaryEnv(url, "3", conf, steps)})
	if r := w.knit("apply", "-f", "env.yaml"); r.code != 3 {
		t.Fatalf("apply of version 3: exit %d\n%s", r.code, r.stderr)
	}
	r := remote(s.token, "rollout", "abort", "shop/canary", "--reason", "error budget")
	s.eventually("the abort turns version 3 back", func() bool { return status().State == "aborted" })
	if st := status(); !strings.Contains(st.Reason, "error budget") {
		t.Fatalf("aborted (exit %d, %s): %+v", r.code, r.stderr, st)
	}
	w.canaryEndsAt(conf, "2")
	remote(s.token, "rollout", "retry", "shop/canary", "--reason", "fixed")
	s.eventually("the retry pauses at step 1 again", func() bool { st := status(); return st.State == "paused" && st.Step == 1 })
	if got, _ := os.ReadFile(conf); !strings.HasPrefix(string(got), "10 ") || !strings.Contains(string(got), "version=3") {
		t.Fatalf("the router after the retry: %q", got)
	}
	audit := w.ok("audit", "shop/canary").stdout
	for _, want := range []string{"looks good", "error budget", "fixed"} {
		if !strings.Contains(audit, want) {
			t.Errorf("the audit trail has no %q:\n%s", want, audit)
		}
	}
}
