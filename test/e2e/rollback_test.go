package e2e

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// releaseModule is an app whose own output says which release it runs;
// each new release runs a provisioner that marks its start in marks and
// sleeps as long as the file marks.delay says (0 when absent), so a test
// can make one apply slow without changing its inputs.
const releaseModule = `
variable "url" { type = string }
variable "release" { type = string }
variable "marks" { type = string }
resource "terraform_data" "app" {
  input            = var.release
  triggers_replace = var.release
  provisioner "local-exec" {
    command = "echo start >> ${var.marks}; sleep $(cat ${var.marks}.delay 2>/dev/null || echo 0)"
  }
}
output "url" { value = var.url }
output "release" { value = terraform_data.app.output }
`

// rolloutEnv is shop/rolled: the app at release, checked over HTTP at
// url, under rollout.onFailure policy; check adds fields to the check.
func rolloutEnv(url, release, policy, marks, check string) string {
	return `apiVersion: knit.dev/v1
kind: Environment
metadata: {name: rolled}
spec:
  teamName: shop
  envName: rolled
  autoApprove: true
  rollout: {onFailure: ` + policy + `}
  components:
    - name: app
      type: terraform
      module: {source: ./app}
      variables:
        - {name: url, value: "` + url + `?release=` + release + `"}
        - {name: release, value: "` + release + `"}
        - {name: marks, value: "` + marks + `"}
      outputs: [{name: url}, {name: release}]
      health:
        - name: http-ok
          http: {url: {valueFrom: app.url}, expectStatus: 200}
          count: 2
          interval: 10ms
` + check
}

// releases is what a loopback health endpoint says of each release of
// the app: 503 for a broken one, 200 for the others. The app's url output
// names its release (?release=N), so the check of what is applied fails
// exactly while a broken release runs.
type releases struct {
	mu     sync.Mutex
	broken map[string]bool
}

func (r *releases) set(broken ...string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.broken = map[string]bool{}
	for _, b := range broken {
		r.broken[b] = true
	}
}

func endpoint(t *testing.T) (string, *releases) {
	r := &releases{broken: map[string]bool{}}
	srv := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, req *http.Request) {
		r.mu.Lock()
		bad := r.broken[req.URL.Query().Get("release")]
		r.mu.Unlock()
		if bad {
			rw.WriteHeader(http.StatusServiceUnavailable)
		}
	}))
	t.Cleanup(srv.Close)
	return srv.URL + "/healthz", r
}

func (w *world) release() string {
	w.t.Helper()
	return strings.TrimSpace(w.ok("output", "shop/rolled", "app", "release").stdout)
}

// signedReceiver collects the notifications whose signature (HMAC-SHA256
// with secret) holds; one that does not fails the test.
type signedReceiver struct {
	t      *testing.T
	mu     sync.Mutex
	bodies []map[string]any
}

func newSignedReceiver(t *testing.T, secret string) (*signedReceiver, string) {
	r := &signedReceiver{t: t}
	srv := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		mac := hmac.New(sha256.New, []byte(secret))
		mac.Write(body)
		want := "sha256=" + hex.EncodeToString(mac.Sum(nil))
		if !hmac.Equal([]byte(req.Header.Get("X-Knit-Signature-256")), []byte(want)) {
			t.Errorf("a notification with a bad signature %q: %s", req.Header.Get("X-Knit-Signature-256"), body)
			rw.WriteHeader(http.StatusUnauthorized)
			return
		}
		var b map[string]any
		_ = json.Unmarshal(body, &b)
		r.mu.Lock()
		r.bodies = append(r.bodies, b)
		r.mu.Unlock()
	}))
	t.Cleanup(srv.Close)
	return r, srv.URL + "/hook"
}

// of returns the summary of the first notification of kind ("", false: none yet).
func (r *signedReceiver) of(kind string) (string, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, b := range r.bodies {
		if b["kind"] == kind {
			s, _ := b["summary"].(string)
			return s, true
		}
	}
	return "", false
}

// A commit whose change makes the HTTP check fail is rolled back by the
// server: the previous revision's inputs are applied again (the module's
// own output shows the old release), and the audit trail and signed
// notifications name the check and the status it saw.
func TestFailedRolloutRollsBackThroughTheServer(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	url, broken := endpoint(t)
	marks := w.path("marks")
	rcv, hook := newSignedReceiver(t, "s3cret")
	repo := newGitRepo(t, map[string]string{
		"envs/app/main.tf": releaseModule,
		"envs/rolled.yaml": rolloutEnv(url, "1", "rollback", marks, ""),
	})
	s := w.startServer("--git-url", "file://"+repo.bare, "--git-path", "envs/", "--git-poll", "200ms",
		"--config", w.notifyConfig("notify.yaml", hook))
	s.eventually("release 1 applied", func() bool { e, _ := s.env("shop/rolled"); return e.Status == "provisioned" })
	if got := w.release(); got != "1" {
		t.Fatalf("release after the first commit: %q", got)
	}

	broken.set("2")
	repo.commit("release 2", map[string]string{"envs/rolled.yaml": rolloutEnv(url, "2", "rollback", marks, "")})
	s.eventually("rollback.done", func() bool { _, ok := rcv.of("rollback.done"); return ok })
	if got := w.release(); got != "1" {
		t.Errorf("release after the rollback: %q, want 1 (the module's own output)", got)
	}
	failed, _ := rcv.of("rollout.failed")
	done, _ := rcv.of("rollback.done")
	for _, want := range []string{"app/http-ok", "status 503"} {
		if !strings.Contains(failed, want) || !strings.Contains(done, want) {
			t.Errorf("notifications do not say %q:\nrollout.failed: %s\nrollback.done: %s", want, failed, done)
		}
	}
	if _, ok := rcv.of("run.failed"); ok {
		t.Error("the failed rollout was also notified as run.failed")
	}
	var audit struct {
		Items []struct{ Action, Actor, Reason, Detail string }
	}
	s.do("GET", "/api/v1/audit?env=shop/rolled", nil, &audit)
	var rollback string
	for _, e := range audit.Items {
		if e.Action == "rollback" {
			rollback = e.Reason + " | " + e.Detail
		}
	}
	if !strings.Contains(rollback, "app/http-ok") || !strings.Contains(rollback, "status 503") || !strings.Contains(rollback, "succeeded") {
		t.Errorf("the audit trail's rollback: %q\n%+v", rollback, audit.Items)
	}
	e, _ := s.env("shop/rolled")
	if e.Status != "provisioned" {
		t.Errorf("environment after the rollback: %s", e.Status)
	}
}

// onFailure pause leaves the environment paused, and knit approve
// continues it (accepts the revision); an endpoint that times out within
// the check's limits is Inconclusive, which pauses even under onFailure
// rollback, and knit rollback then goes back.
func TestRolloutPausesUntilAPersonDecides(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	url, broken := endpoint(t)
	marks := w.path("marks")
	w.write(map[string]string{"app/main.tf": releaseModule, "env.yaml": rolloutEnv(url, "1", "pause", marks, "")})
	w.ok("apply", "-f", "env.yaml")

	broken.set("2")
	w.write(map[string]string{"env.yaml": rolloutEnv(url, "2", "pause", marks, "")})
	r := w.knit("apply", "-f", "env.yaml")
	if r.code != 1 || !strings.Contains(r.stderr, "is paused: knit approve shop/rolled") {
		t.Fatalf("apply under pause: exit %d\n%s", r.code, r.stderr)
	}
	if st := w.ok("status", "shop/rolled").stdout; !strings.Contains(st, "paused") {
		t.Errorf("status of a paused rollout:\n%s", st)
	}
	r = w.ok("approve", "shop/rolled", "--reason", "the 503 is expected")
	if !strings.Contains(r.stdout, "revision 2 accepted; shop/rolled is applied") {
		t.Errorf("knit approve: %s", r.stdout)
	}
	if got := w.release(); got != "2" {
		t.Errorf("release after accepting: %q", got)
	}
	if r := w.knit("approve", "shop/rolled"); r.code != 1 || !strings.Contains(r.stderr, "not paused") {
		t.Errorf("approving again: exit %d\n%s", r.code, r.stderr)
	}

	// A hanging endpoint: each measurement times out, so Inconclusive.
	hang := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) { <-r.Context().Done() }))
	defer hang.Close()
	inconclusive := "          timeout: 300ms\n          consecutiveErrorLimit: 1\n"
	w.write(map[string]string{"env.yaml": rolloutEnv(hang.URL, "3", "rollback", marks, inconclusive)})
	r = w.knit("apply", "-f", "env.yaml")
	if r.code != 1 || !strings.Contains(r.stderr, "verification Inconclusive") || !strings.Contains(r.stderr, "is paused") ||
		strings.Contains(r.stderr, "rolling shop/rolled back") {
		t.Fatalf("apply against a hanging endpoint: exit %d\n%s", r.code, r.stderr)
	}
	if got := w.release(); got != "3" {
		t.Errorf("release while paused: %q", got)
	}
	// knit rollback goes back to the last good revision: the accepted 2
	// (its endpoint works again).
	broken.set()
	r = w.ok("rollback", "shop/rolled", "--reason", "nobody could tell")
	if !strings.Contains(r.stdout, "rollback shop/rolled") || !strings.Contains(r.stdout, "succeeded") {
		t.Errorf("knit rollback:\n%s", r.stdout)
	}
	if got := w.release(); got != "2" {
		t.Errorf("release after knit rollback: %q, want 2", got)
	}
	audit := w.ok("audit", "shop/rolled").stdout
	if !strings.Contains(audit, "rollout-accepted") || !strings.Contains(audit, "nobody could tell") {
		t.Errorf("audit:\n%s", audit)
	}
}

// The bad days: nothing to go back to (a clear error, nothing changes),
// two failures in a row (the rollback fails too, and is not rolled back
// again), and SIGTERM during a rollback (recorded interrupted, lock
// released, the next rollback finishes the job).
func TestRollbackOnABadDay(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	url, broken := endpoint(t)
	marks := w.path("marks")
	broken.set("1")
	w.write(map[string]string{"app/main.tf": releaseModule, "env.yaml": rolloutEnv(url, "1", "rollback", marks, "")})
	r := w.knit("apply", "-f", "env.yaml")
	if r.code != 1 || !strings.Contains(r.stderr, "not rolled back: no revision to roll back to") {
		t.Fatalf("first apply failing: exit %d\n%s", r.code, r.stderr)
	}
	runs := func() int {
		var items []json.RawMessage
		if err := json.Unmarshal([]byte(w.ok("history", "shop/rolled", "-o", "json").stdout), &items); err != nil {
			t.Fatal(err)
		}
		return len(items)
	}
	before := runs()
	r = w.knit("rollback", "shop/rolled")
	if r.code != 1 || !strings.Contains(r.stderr, "no revision of shop/rolled before revision 1 passed verification") {
		t.Errorf("knit rollback without a good revision: exit %d\n%s", r.code, r.stderr)
	}
	if after := runs(); after != before {
		t.Errorf("a refused rollback recorded runs: %d, then %d", before, after)
	}

	// A good revision, then two failures in a row: the rollback's own
	// verification fails (release 2 broke meanwhile), and nothing rolls
	// back again.
	w.write(map[string]string{"env.yaml": rolloutEnv(url, "2", "rollback", marks, "")})
	w.ok("apply", "-f", "env.yaml")
	broken.set("2", "3")
	w.write(map[string]string{"env.yaml": rolloutEnv(url, "3", "rollback", marks, "")})
	before = runs()
	r = w.knit("apply", "-f", "env.yaml")
	if r.code != 1 || !strings.Contains(r.stderr, "rolling shop/rolled back") {
		t.Fatalf("second failure: exit %d\n%s", r.code, r.stderr)
	}
	if n := runs() - before; n != 2 {
		t.Errorf("runs after a failed rollout whose rollback fails: %d, want 2 (the apply, one rollback)\n%s", n, w.ok("history", "shop/rolled").stdout)
	}
	if got := w.release(); got != "2" {
		t.Errorf("release after the failed rollback: %q, want 2 (applied, then not verified)", got)
	}

	// SIGTERM while a rollback applies (from a broken release 4, applied
	// under onFailure none, back to 2).
	broken.set("4")
	w.write(map[string]string{"env.yaml": rolloutEnv(url, "4", "none", marks, "")})
	if r := w.knit("apply", "-f", "env.yaml"); r.code != 1 || strings.Contains(r.stderr, "rolling") {
		t.Fatalf("apply of a broken release under onFailure none: exit %d\n%s", r.code, r.stderr)
	}
	w.write(map[string]string{"marks.delay": "60"})
	starts := strings.Count(w.read("marks"), "start")
	var stderr strings.Builder
	cmd := exec.Command(knitBin, "rollback", "shop/rolled")
	cmd.Dir, cmd.Env, cmd.Stderr = w.dir, w.env, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	waitFor(t, 60*time.Second, func() bool { return strings.Count(w.read("marks"), "start") > starts })
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	err := cmd.Wait()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 1 {
		t.Errorf("knit rollback after SIGTERM: %v, want exit 1\n%s", err, stderr.String())
	}
	hist := w.ok("history", "shop/rolled", "-o", "json").stdout
	if !strings.Contains(hist, `"kind": "rollback"`) || !strings.Contains(hist, `"status": "interrupted"`) {
		t.Errorf("the interrupted rollback's record:\n%s", hist)
	}
	w.write(map[string]string{"marks.delay": "0"})
	broken.set()
	r = w.ok("rollback", "shop/rolled")
	if got := w.release(); got != "2" {
		t.Errorf("release after the rollback ran again: %q, want 2\n%s", got, r.stdout)
	}
}
