package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// secretModule is fileModule with a sensitive output as well.
const secretModule = fileModule + `
output "secret" {
  value     = "pw-${var.content}"
  sensitive = true
}
`

func remoteEnv(files string) string {
	comp := func(name, extra string) string {
		return fmt.Sprintf(`    - name: %[1]s
      type: terraform
      module: {source: ./modules/secret}
      outputs: [{name: id}, {name: secret, sensitive: true}]
%[3]s      variables:
        - {name: path, value: %[2]s/%[1]s.txt}
        - {name: content, value: "v1"}
`, name, files, extra)
	}
	return `apiVersion: knit.dev/v1
kind: Environment
metadata: {name: remote}
spec:
  teamName: shop
  envName: remote
  autoApprove: true
  components:
` + comp("net", "") + comp("web", "      dependsOn: [net]\n      autoApprove: false\n")
}

// volatile is what may differ between two runs of the same command a
// moment apart: ages, elapsed times and run IDs; padding is what a table
// adds around them, so a column as wide as "1.02s" and one as wide as
// "960ms" read the same.
var (
	volatile = regexp.MustCompile(`\b\d+(\.\d+)?(ms|s|m|h|d)\b|\b\d{8}T\d{6}[-\w]*|run [-\w]+`)
	padding  = regexp.MustCompile(` {2,}`)
)

func normalize(s string) string {
	return padding.ReplaceAllString(volatile.ReplaceAllString(s, "…"), " ")
}

// TestCLIThroughTheServer runs the CLI against a real knit serve and checks
// each command shows what it shows locally, with the same exit code.
func TestCLIThroughTheServer(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	files := w.path("files")
	repo := newGitRepo(t, map[string]string{"envs/modules/secret/main.tf": secretModule, "envs/remote.yaml": remoteEnv(files)})
	s := w.startServer("--git-url", "file://"+repo.bare, "--git-path", "envs/", "--git-poll", "200ms")
	s.eventually("web waits for approval", func() bool { e, _ := s.env("shop/remote"); return e.Status == "awaiting-approval" })
	viewer := strings.TrimSpace(w.ok("token", "create", "ci", "--role", "viewer").stdout)

	server := []string{"KNIT_SERVER=" + s.url, "KNIT_TOKEN=" + s.token}
	remote := func(args ...string) result {
		t.Helper()
		r := w.knitWith(server, args...)
		if strings.Contains(r.stdout+r.stderr, s.token) {
			t.Fatalf("knit %s printed the token", strings.Join(args, " "))
		}
		return r
	}
	// same runs a command locally and through the server: same exit code,
	// same stdout (ages and run IDs aside).
	same := func(wantCode int, args ...string) result {
		t.Helper()
		l, r := w.knit(args...), remote(args...)
		if l.code != wantCode || r.code != wantCode {
			t.Fatalf("knit %s: exit %d locally, %d through the server, want %d\nlocal stderr:\n%s\nremote stderr:\n%s",
				strings.Join(args, " "), l.code, r.code, wantCode, l.stderr, r.stderr)
		}
		if normalize(l.stdout) != normalize(r.stdout) {
			t.Fatalf("knit %s differs through the server\nlocal:\n%s\nremote:\n%s", strings.Join(args, " "), l.stdout, r.stdout)
		}
		return r
	}

	// Reads.
	same(0, "status")
	same(0, "status", "shop/remote")
	same(0, "status", "remote", "-o", "json") // by metadata name too
	same(1, "status", "shop/nope")
	if r := same(0, "approvals"); !strings.Contains(r.stdout, "web") || !strings.Contains(r.stdout, "pending") {
		t.Fatalf("approvals:\n%s", r.stdout)
	}
	same(0, "output", "shop/remote")
	same(0, "output", "shop/remote", "net", "id", "-o", "json")
	// The graph of an applied environment, and completion of its names and
	// waiting approvals, through the API as locally.
	if r := same(0, "graph", "shop/remote"); !strings.Contains(r.stdout, "web (terraform)  ← net") {
		t.Fatalf("graph:\n%s", r.stdout)
	}
	if r := same(0, "__complete", "status", ""); !strings.Contains(r.stdout, "shop/remote\tawaiting-approval\n") {
		t.Fatalf("completion of environments:\n%s", r.stdout)
	}
	if r := same(0, "__complete", "logs", "shop/remote", ""); !strings.Contains(r.stdout, "net\t") || !strings.Contains(r.stdout, "web\t") {
		t.Fatalf("completion of components:\n%s", r.stdout)
	}
	if r := same(0, "__complete", "approve", "shop/remote", ""); !regexp.MustCompile(`(?m)^web\tapproval #\d+, plan [0-9a-f]{12}$`).MatchString(r.stdout) {
		t.Fatalf("completion of approvals:\n%s", r.stdout)
	}

	// Health checks run on the server (an operator's token); this
	// environment has none.
	if r := same(0, "health", "shop/remote"); !strings.Contains(r.stdout, "no health checks") {
		t.Fatalf("health:\n%s", r.stdout)
	}

	// A viewer may look but not approve (--token-file instead of KNIT_TOKEN).
	tokFile := w.path("viewer.token")
	os.WriteFile(tokFile, []byte(viewer+"\n"), 0o600)
	ro := w.knitWith(nil, "--server", s.url, "--token-file", tokFile, "approve", "shop/remote", "web")
	if ro.code != 1 || !strings.Contains(ro.stderr, "the server refused: ") || strings.Contains(ro.stderr, viewer) {
		t.Fatalf("a viewer approving: exit %d\n%s", ro.code, ro.stderr)
	}

	// Approve: the CLI sends the waiting plan's checksum and follows the
	// apply the server starts; progress on stderr, the result on stdout.
	r := remote("approve", "shop/remote", "web", "--reason", "looks right")
	if r.code != 0 || !regexp.MustCompile(`approval #\d+ of web approved by root`).MatchString(r.stderr) ||
		!regexp.MustCompile(`(?m)^apply shop/remote \(run \S+, revision 1\): succeeded$`).MatchString(r.stdout) ||
		!regexp.MustCompile(`(?m)^\s+web\s+applied\b`).MatchString(r.stdout) ||
		!regexp.MustCompile(`(?m)^\d\d:\d\d:\d\d web\s+applying$`).MatchString(r.stderr) {
		t.Fatalf("approve through the server: exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	if got := w.read("files/web.txt"); got != "v1" {
		t.Fatalf("web.txt = %q after the approval", got)
	}
	same(0, "approvals", "shop/remote")
	same(0, "history", "shop/remote")
	same(0, "history", "shop/remote", "-o", "json")
	same(0, "audit")
	same(0, "audit", "shop/remote", "-o", "json")
	same(0, "output", "shop/remote", "web")
	if l, r := w.knit("logs", "shop/remote", "web"), remote("logs", "shop/remote", "web"); r.code != 0 || l.stdout != r.stdout || l.stderr != r.stderr || !strings.Contains(r.stdout, "local_file.f") {
		t.Fatalf("logs differ through the server (exit %d)\nlocal:\n%s%s\nremote:\n%s%s", r.code, l.stderr, l.stdout, r.stderr, r.stdout)
	}

	// Sensitive outputs: masked for all, revealed to an admin.
	if r := remote("output", "shop/remote", "web", "secret"); r.code != 0 || strings.TrimSpace(r.stdout) != "(sensitive)" {
		t.Fatalf("masked output: exit %d %q", r.code, r.stdout)
	}
	if r := remote("output", "shop/remote", "web", "secret", "--show-sensitive"); r.code != 0 || strings.TrimSpace(r.stdout) != "pw-v1" {
		t.Fatalf("revealed output: exit %d %q %s", r.code, r.stdout, r.stderr)
	}
	asViewer := w.knitWith([]string{"KNIT_SERVER=" + s.url, "KNIT_TOKEN=" + viewer}, "output", "shop/remote", "--show-sensitive")
	if asViewer.code != 1 || !strings.Contains(asViewer.stderr, "the server refused: ") || !strings.Contains(asViewer.stderr, "admin") {
		t.Fatalf("a viewer revealing: exit %d\n%s", asViewer.code, asViewer.stderr)
	}

	// Drift found out of band: exit 2 both ways, the same report.
	if err := os.WriteFile(filepath.Join(files, "net.txt"), []byte("changed by hand"), 0o644); err != nil {
		t.Fatal(err)
	}
	same(2, "drift", "shop/remote")
	var rep struct {
		Drift      bool
		Components []struct{ Name, Status string }
	}
	r = remote("drift", "shop/remote", "-o", "json")
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil || r.code != 2 || !rep.Drift {
		t.Fatalf("drift -o json: exit %d, %v\n%s", r.code, err, r.stdout)
	}
	// Reconcile through the server brings net back (it may apply at once).
	if r := remote("drift", "shop/remote", "--reconcile"); r.code != 0 || w.read("files/net.txt") != "v1" {
		t.Fatalf("drift --reconcile: exit %d, net.txt %q\n%s\n%s", r.code, w.read("files/net.txt"), r.stdout, r.stderr)
	}
	same(0, "drift", "shop/remote")
	same(0, "plan", "shop/remote", "--detailed-exitcode")
	same(0, "apply", "shop/remote")

	// A change from git is gated through the server as locally: web
	// waits until someone decides; a rejection keeps it.
	hash := repo.commit("v2", map[string]string{"envs/remote.yaml": strings.ReplaceAll(remoteEnv(files), `"v1"`, `"v2"`)})
	s.eventually("web waits for approval of v2", func() bool {
		e, _ := s.env("shop/remote")
		revs := s.revisions("shop/remote")
		return e.Status == "awaiting-approval" && len(revs) > 0 && revs[0].Commit == hash
	})
	if r := remote("reject", "shop/remote", "web", "--reason", "not today"); r.code != 0 || !regexp.MustCompile(`approval #\d+ of web rejected by root`).MatchString(r.stderr) {
		t.Fatalf("reject through the server: exit %d\n%s", r.code, r.stderr)
	}
	if w.read("files/web.txt") != "v1" {
		t.Fatal("web was changed without an approval")
	}

	// What the server cannot do, and refusals, are said plainly.
	if r := remote("plan", "-f", "envs/remote.yaml"); r.code != 1 || !strings.Contains(r.stderr, "the server takes environments from git") {
		t.Fatalf("plan -f through the server: exit %d\n%s", r.code, r.stderr)
	}
	if l, r := w.knit("teardown", "shop/remote"), remote("teardown", "shop/remote"); l.code != 1 || r.code != 1 || l.stderr != r.stderr {
		t.Fatalf("teardown without a terminal: exit %d/%d\n%s\n%s", l.code, r.code, l.stderr, r.stderr)
	}
	bad := w.knitWith([]string{"KNIT_SERVER=" + s.url, "KNIT_TOKEN=nope"}, "status")
	if bad.code != 1 || !strings.Contains(bad.stderr, "the server refused the token: set KNIT_TOKEN (knit token create on the server)") {
		t.Fatalf("a bad token: exit %d\n%s", bad.code, bad.stderr)
	}

	// teardown --auto-approve says yes to the whole teardown, through the
	// server as locally: nothing waits for approval. It is a run, so a
	// viewer may not start it.
	ro = w.knitWith([]string{"KNIT_SERVER=" + s.url, "KNIT_TOKEN=" + viewer}, "teardown", "shop/remote", "--auto-approve")
	if ro.code != 1 || !strings.Contains(ro.stderr, "the server refused: ") || w.read("files/web.txt") != "v1" {
		t.Fatalf("a viewer's teardown: exit %d\n%s", ro.code, ro.stderr)
	}
	if r := remote("teardown", "shop/remote", "--auto-approve"); r.code != 0 || !regexp.MustCompile(`(?m)^teardown shop/remote .*: succeeded$`).MatchString(r.stdout) {
		t.Fatalf("teardown --auto-approve through the server: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	for _, f := range []string{"net.txt", "web.txt"} {
		if _, err := os.Stat(filepath.Join(files, f)); err == nil {
			t.Errorf("%s is still there after the teardown", f)
		}
	}
	if r := remote("approvals", "shop/remote"); strings.Contains(r.stdout, "pending") {
		t.Errorf("an approval waits after teardown --auto-approve:\n%s", r.stdout)
	}
}
