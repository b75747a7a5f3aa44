package e2e

import (
	"os"
	"strings"
	"testing"
)

// teamEnv is pay/prod under the metadata name "ops" (another team's
// name), whose app waits for approval; app's apply creates mark.
func teamEnv(mark string) string {
	return `apiVersion: knit.dev/v1
kind: Environment
metadata: {name: ops}
spec:
  teamName: pay
  envName: prod
  autoApprove: true
  components:
    - name: db
      type: script
      script: {apply: "echo '{}'"}
    - name: app
      type: script
      autoApprove: false
      dependsOn: [db]
      script: {apply: "touch ` + mark + `; echo '{}'"}
`
}

// TestCLIThroughTheServerCannotDecideAnotherTeamsPlan: knit approve and
// knit reject with an operator token of team ops, against pay/prod by ID
// (the server answers 403) and by its metadata name "ops" (which that
// token cannot even see): refused, and nothing is decided or applied. An
// HTTP decision without the plan's checksum is refused. knit approve with
// a token that may decide still works: it sends the waiting plan's
// checksum itself.
func TestCLIThroughTheServerCannotDecideAnotherTeamsPlan(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	mark := w.path("app-applied")
	w.write(map[string]string{"pay.yaml": teamEnv(mark)})
	if r := w.knit("apply", "-f", "pay.yaml"); r.code != 3 {
		t.Fatalf("apply: exit %d, want 3 (awaiting approval)\n%s%s", r.code, r.stdout, r.stderr)
	}
	ops := strings.TrimSpace(w.ok("token", "create", "ops-operator", "--role", "operator", "--team", "ops").stdout)
	s := w.startServer()
	defer s.stop()
	asOps := []string{"KNIT_SERVER=" + s.url, "KNIT_TOKEN=" + ops}
	for _, verb := range []string{"approve", "reject"} {
		r := w.knitWith(asOps, verb, "pay/prod", "app", "--reason", "not mine")
		if r.code != 1 || !strings.Contains(r.stderr, "the server refused: ") || !strings.Contains(r.stderr, "forbidden") {
			t.Errorf("team ops: knit %s pay/prod app: exit %d\n%s", verb, r.code, r.stderr)
		}
		r = w.knitWith(asOps, verb, "ops", "app", "--reason", "not mine")
		if r.code != 1 || strings.Contains(r.stderr, "approved") || strings.Contains(r.stderr, "rejected") {
			t.Errorf("team ops: knit %s ops app: exit %d\n%s", verb, r.code, r.stderr)
		}
	}
	var e struct{ Error struct{ Code string } }
	if code := s.do("POST", "/api/v1/environments/pay/prod/components/app/approve", map[string]string{"reason": "no checksum"}, &e); code != 400 {
		t.Errorf("an approval without the checksum: %d %+v, want 400", code, e)
	}
	if _, err := os.Stat(mark); err == nil {
		t.Fatal("a refused decision applied app")
	}
	if r := w.ok("approvals", "pay/prod"); !strings.Contains(r.stdout, "pending") {
		t.Fatalf("the approval is no longer pending:\n%s", r.stdout)
	}

	// A checksum that is not the waiting plan's, locally and through the server.
	asRoot := []string{"KNIT_SERVER=" + s.url, "KNIT_TOKEN=" + s.token}
	for _, env := range [][]string{nil, asRoot} {
		if r := w.knitWith(env, "approve", "pay/prod", "app", "--checksum", "0123456789ab"); r.code != 1 ||
			!strings.Contains(r.stderr, "not the one named") {
			t.Errorf("knit approve --checksum of another plan (server %v): exit %d\n%s", env != nil, r.code, r.stderr)
		}
	}

	// An operator of every team, by the metadata name, without --checksum.
	r := w.knitWith(asRoot, "approve", "ops", "app", "--reason", "reviewed")
	if r.code != 0 {
		t.Fatalf("knit approve ops app as root: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if _, err := os.Stat(mark); err != nil {
		t.Fatalf("the approved plan was not applied: %v\n%s", err, r.stdout)
	}
}
