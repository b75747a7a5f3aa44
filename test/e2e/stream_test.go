package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"knit.dev/knit/internal/cli"
)

// newScriptWorld is newWorld for tests that run only script components:
// they need no OpenTofu.
func newScriptWorld(t *testing.T) *world {
	if testing.Short() {
		t.Skip("end-to-end test: not in -short mode")
	}
	dir := t.TempDir()
	w := &world{t: t, dir: dir, dataDir: filepath.Join(dir, ".knit")}
	w.env = append(os.Environ(), "KNIT_DATA_DIR="+w.dataDir, "KNIT_ACTOR=e2e", "HOME="+dir)
	return w
}

// scriptEnv is an environment named name with one script component.
func scriptEnv(name, apply string) string {
	return `apiVersion: knit.dev/v1
kind: Environment
metadata: {name: ` + name + `}
spec:
  teamName: qa
  envName: ` + name + `
  autoApprove: true
  components:
    - name: loud
      type: script
      script: {apply: ` + strconv.Quote(apply) + `}
`
}

// lastRun is the newest run of env as `knit history` records it.
func (w *world) lastRun(env string) (status string, finished time.Time) {
	w.t.Helper()
	var runs []struct {
		Status     string    `json:"status"`
		FinishedAt time.Time `json:"finishedAt"`
	}
	if err := json.Unmarshal([]byte(w.ok("history", env, "-o", "json").stdout), &runs); err != nil || len(runs) == 0 {
		w.t.Fatalf("history of %s: %v %v", env, runs, err)
	}
	return runs[0].Status, runs[0].FinishedAt
}

// TestAMillionLinesFinishSoonAfterTheToolInFlatMemory: a tool printing a
// million lines. The run used to take minutes after the tool had exited
// (the event log shifted its events on every append past 20,000) with
// knit at 100 % CPU. Now the run is recorded finished within seconds of
// the tool's exit, knit's peak RSS stays under 200 MiB, and the stored
// log keeps the first and last lines with a note of what it left out.
func TestAMillionLinesFinishSoonAfterTheToolInFlatMemory(t *testing.T) {
	// Not parallel: its tool prints at full speed (a core) and the test
	// bounds how soon knit finishes after it; beside other tests on two
	// cores that bound measures the machine, not knit.
	w := newScriptWorld(t)
	exit := w.path("tool-exit")
	w.write(map[string]string{"env.yaml": scriptEnv("million", "seq 1 1000000 >&2; date +%s%N > "+exit)})
	cmd := exec.Command(knitBin, "apply", "-f", "env.yaml")
	var stderr bytes.Buffer
	cmd.Dir, cmd.Env, cmd.Stderr = w.dir, w.env, &stderr
	peakRSS := measureRSS(cmd, w.path("knit-rss"))
	done := make(chan error, 1)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("apply: %v\n%s", err, tail(stderr.String()))
		}
	case <-time.After(3 * time.Minute): // hang guard; it takes seconds
		cmd.Process.Kill()
		t.Fatal("apply of a million lines still running after 3 minutes")
	}
	rss, err := peakRSS()
	if err != nil {
		t.Fatal(err)
	}
	if rss > 200<<20 {
		t.Errorf("knit's peak RSS was %d MiB, want under 200", rss>>20)
	}
	ns, err := strconv.ParseInt(strings.TrimSpace(w.read("tool-exit")), 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	status, finished := w.lastRun("qa/million")
	gap := finished.Sub(time.Unix(0, ns))
	if status != "succeeded" || gap > 10*time.Second {
		t.Errorf("run %s %s after the tool exited, want succeeded within 10s", status, gap)
	}
	t.Logf("run finished %s after the tool exited; knit's peak RSS %d MiB", gap, rss>>20)
	logs := w.ok("logs", "qa/million", "loud").stdout
	if !strings.HasPrefix(logs, "1\n2\n") || !strings.Contains(logs, "\n1000000\n") || !strings.Contains(logs, "lines omitted") || len(logs) > 2<<20 {
		t.Errorf("stored log of %d bytes: %.40q … %q", len(logs), logs, logs[max(0, len(logs)-40):])
	}
}

func tail(s string) string { return s[max(0, len(s)-2000):] }

// TestSIGTERMEndsAnApplyMidStream sends the SIGTERM `timeout` sends to a
// knit apply whose tool prints without end at full speed: knit ends within
// its grace period with the graceful exit code, the run is recorded
// interrupted, and the lock is free for the next apply. It used to run on
// at 100 % CPU for ten minutes and more.
func TestSIGTERMEndsAnApplyMidStream(t *testing.T) {
	// Not parallel: its tool floods at full speed (a core), and knit must
	// end within its own grace (cli.StopGrace) under that flood; beside
	// other tests on two cores it did not (seen at load 37).
	w := newScriptWorld(t)
	started := w.path("started")
	w.write(map[string]string{
		"env.yaml":   scriptEnv("flood", "touch "+started+"; while true; do seq 1 100000 >&2; done"),
		"quiet.yaml": scriptEnv("flood", "echo quiet >&2"),
	})
	cmd := exec.Command(knitBin, "apply", "-f", "env.yaml")
	var stderr bytes.Buffer
	cmd.Dir, cmd.Env, cmd.Stderr = w.dir, w.env, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	waitFor(t, 2*time.Minute, func() bool { _, err := os.Stat(started); return err == nil })
	time.Sleep(2 * time.Second) // let the flood run: knit busy reading it
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	sent := time.Now()
	select {
	case err := <-done:
		t.Logf("knit ended %s after SIGTERM", time.Since(sent))
		var ee *exec.ExitError
		if !errorsAs(err, &ee) || ee.ExitCode() != cli.ExitFailure {
			t.Errorf("knit after SIGTERM: %v, want exit %d (interrupted gracefully)\n%s", err, cli.ExitFailure, tail(stderr.String()))
		}
	case <-time.After(cli.StopGrace + 30*time.Second): // failure guard
		cmd.Process.Kill()
		t.Fatalf("knit still running %s after SIGTERM", time.Since(sent))
	}
	if status, _ := w.lastRun("qa/flood"); status != "interrupted" {
		t.Errorf("run recorded %s, want interrupted", status)
	}
	// The lock is free: the next apply of the environment runs.
	w.ok("apply", "-f", "quiet.yaml")
	if status, _ := w.lastRun("qa/flood"); status != "succeeded" {
		t.Errorf("the next apply: %s", status)
	}
}

func errorsAs(err error, ee **exec.ExitError) bool {
	e, ok := err.(*exec.ExitError)
	*ee = e
	return ok
}

// A 3-line key and a token, as a component's outputs would hold them.
const (
	pemBody  = "MIIBVQIBADANBgkqhkiG9w0BAQEFAASCAT8wggE7AgEAAkEAq7BFUpkGp3+LQmlQ"
	pemValue = "-----BEGIN PRIVATE KEY-----\n" + pemBody + "\n-----END PRIVATE KEY-----"
	newToken = "tok-7f3a9c2e5d1b"
)

// secretsEnv: vault prints its new token before knit knows it (its
// outputs, read after it exits, make it sensitive) and outputs it with a
// 3-line key; app takes the key as a sensitive input and prints it whole
// and its middle line alone. The values are in files of dir, not in the
// spec (which is stored as it is); vault fails until the file go exists.
func secretsEnv(dir string) string {
	vault := fmt.Sprintf("test -f %[1]s/go || exit 1; echo \"issued token $(cat %[1]s/token)\" >&2; cat %[1]s/outputs", dir)
	return `apiVersion: knit.dev/v1
kind: Environment
metadata: {name: secrets}
spec:
  teamName: qa
  envName: secrets
  autoApprove: true
  components:
    - name: vault
      type: script
      outputs: [{name: key, sensitive: true}, {name: token, sensitive: true}]
      script: {apply: ` + strconv.Quote(vault) + `}
    - name: app
      type: script
      dependsOn: [vault]
      variables: [{name: key, valueFrom: vault.key}]
      script: {apply: ` + strconv.Quote(`printf 'key:\n%s\n' "$KNIT_VAR_KEY" >&2; echo "middle: $(printf '%s\n' "$KNIT_VAR_KEY" | sed -n 2p)" >&2`) + `}
`
}

// TestSecretsNeverReachEventsLogsStoreOrDataDir runs an apply through knit
// serve and reads its server-sent events, the stored logs (knit logs), the
// server's log and every file of the data dir (the SQLite database
// included): neither a line of the 3-line key nor the token printed before
// knit knew it is anywhere, and the live lines are masked as the stored ones.
func TestSecretsNeverReachEventsLogsStoreOrDataDir(t *testing.T) {
	t.Parallel()
	w := newScriptWorld(t)
	outputs, _ := json.Marshal(map[string]string{"key": pemValue, "token": newToken})
	w.write(map[string]string{"env.yaml": secretsEnv(w.dir), "token": newToken, "outputs": string(outputs)})
	// vault fails at first: applied again through the server below.
	if r := w.knit("apply", "-f", "env.yaml"); r.code != 1 {
		t.Fatalf("first apply: exit %d\n%s", r.code, r.stderr)
	}
	w.write(map[string]string{"go": ""})
	s := w.startServer()
	var started struct {
		RunID string `json:"runId"`
	}
	if code := s.do("POST", "/api/v1/environments/qa/secrets/runs", map[string]string{"kind": "apply"}, &started); code != http.StatusAccepted {
		t.Fatalf("start run: %d", code)
	}
	req, _ := http.NewRequest("GET", s.url+"/api/v1/runs/"+started.RunID+"/events", nil)
	req.Header.Set("Authorization", "Bearer "+s.token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	sse, err := io.ReadAll(resp.Body) // until the run finishes
	resp.Body.Close()
	if err != nil || !strings.Contains(string(sse), "event: run-finished") {
		t.Fatalf("events: %v\n%s", err, sse)
	}
	if !strings.Contains(string(sse), `"runStatus":"succeeded"`) || !strings.Contains(string(sse), "issued token (sensitive value)") ||
		!strings.Contains(string(sse), "middle: (sensitive value)") {
		t.Errorf("events lack the masked lines or the run failed:\n%s", sse)
	}
	texts := map[string]string{
		"events":          string(sse),
		"knit logs vault": w.ok("logs", "qa/secrets", "vault").stdout,
		"knit logs app":   w.ok("logs", "qa/secrets", "app").stdout,
	}
	// The dashboard: the run's page and its live stream, the components' pages.
	for _, path := range []string{"/runs/" + started.RunID, "/runs/" + started.RunID + "/events",
		"/env/qa/secrets/c/vault", "/env/qa/secrets/c/app"} {
		texts["dashboard "+path] = s.page(path)
	}
	if !strings.Contains(texts["dashboard /runs/"+started.RunID+"/events"], "middle: (sensitive value)") {
		t.Errorf("the dashboard's stream lacks the masked line:\n%s", texts["dashboard /runs/"+started.RunID+"/events"])
	}
	s.stop()
	texts["server log"] = s.log.String()
	if !strings.Contains(texts["knit logs app"], "middle: (sensitive value)") {
		t.Errorf("stored log of app:\n%s", texts["knit logs app"])
	}
	err = filepath.WalkDir(w.dataDir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		// Every file is read: the database, the work dirs' saved plans
		// and outputs, the server's files.
		b, err := os.ReadFile(p)
		texts[p] = string(b)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	for where, text := range texts {
		for _, secret := range []string{pemBody, newToken} {
			if strings.Contains(text, secret) {
				t.Errorf("%s shows %.12s…", where, secret)
			}
		}
	}
}

// page reads a dashboard page (or its event stream, to its end) signed in
// with the admin token.
func (s *server) page(path string) string {
	s.t.Helper()
	req, _ := http.NewRequest("GET", s.url+path, nil)
	req.AddCookie(&http.Cookie{Name: "knit_token", Value: s.token})
	if strings.HasSuffix(path, "/events") {
		req.Header.Set("Accept", "text/event-stream")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		s.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		s.t.Fatalf("GET %s: %d %v\n%s", path, resp.StatusCode, err, b)
	}
	return string(b)
}
