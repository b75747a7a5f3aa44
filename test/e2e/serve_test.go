package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"
)

// server is a real knit serve process on a loopback port.
type server struct {
	t     *testing.T
	w     *world
	cmd   *exec.Cmd
	url   string
	token string
	log   *syncBuffer
}

// syncBuffer is a server's log: written by the goroutine reading its
// stderr, read by the test.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) WriteString(s string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.b.WriteString(s)
}

// Write makes it a process's stdout and stderr.
func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

var listening = regexp.MustCompile(`listening on (127\.0\.0\.1:\d+)`)

// startServer runs knit serve with args on a random loopback port and an
// admin token, and waits until it listens.
func (w *world) startServer(args ...string) *server {
	w.t.Helper()
	tok := strings.TrimSpace(w.ok("token", "create", "root", "--role", "admin").stdout)
	return w.startServerWithToken(tok, args...)
}

// waitListening reads a server's log until it says where it listens.
func waitListening(t *testing.T, stderr io.Reader, log *syncBuffer) string {
	t.Helper()
	addr := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			line := sc.Text()
			log.WriteString(line + "\n")
			if m := listening.FindStringSubmatch(line); m != nil {
				select {
				case addr <- m[1]:
				default:
				}
			}
		}
	}()
	select {
	case a := <-addr:
		return a
	case <-time.After(30 * time.Second):
		t.Fatalf("knit serve did not start:\n%s", log)
	}
	return ""
}

func (s *server) stop() {
	if s.cmd.ProcessState == nil {
		s.cmd.Process.Signal(os.Interrupt)
		done := make(chan struct{})
		go func() { s.cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			s.cmd.Process.Kill()
		}
	}
}

// do calls the API with the admin token and decodes the JSON answer into out.
func (s *server) do(method, path string, body any, out any) int {
	s.t.Helper()
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, _ := http.NewRequest(method, s.url+path, rd)
	req.Header.Set("Authorization", "Bearer "+s.token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		s.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	if out != nil && len(data) > 0 {
		if err := json.Unmarshal(data, out); err != nil {
			s.t.Fatalf("%s %s: %v\n%s", method, path, err, data)
		}
	}
	return resp.StatusCode
}

// eventually polls cond until it holds (hang guard: two minutes).
func (s *server) eventually(what string, cond func() bool) {
	s.t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for !cond() {
		if time.Now().After(deadline) {
			s.t.Fatalf("never happened: %s\nserver log:\n%s", what, s.log)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

type apiEnv struct {
	Status          string `json:"status"`
	Revision        int    `json:"revision"`
	AppliedRevision int    `json:"appliedRevision"`
	Components      []struct {
		Name, Status, Code string
	} `json:"components"`
}

func (s *server) env(id string) (apiEnv, int) {
	var e apiEnv
	code := s.do("GET", "/api/v1/environments/"+id, nil, &e)
	return e, code
}

// gitRepo is a bare repository and a clone that commits to it.
type gitRepo struct {
	t          *testing.T
	bare, work string
}

func newGitRepo(t *testing.T, files map[string]string) *gitRepo {
	root := t.TempDir()
	r := &gitRepo{t: t, bare: filepath.Join(root, "envs.git"), work: filepath.Join(root, "work")}
	git(t, root, "init", "--bare", "-b", "main", r.bare)
	git(t, root, "clone", r.bare, r.work)
	git(t, r.work, "checkout", "-b", "main")
	r.commit("initial", files)
	return r
}

// commit writes files (empty content: delete) and pushes; it returns the hash.
func (r *gitRepo) commit(msg string, files map[string]string) string {
	for name, content := range files {
		p := filepath.Join(r.work, name)
		if content == "" {
			git(r.t, r.work, "rm", "-q", name)
			continue
		}
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			r.t.Fatal(err)
		}
		git(r.t, r.work, "add", name)
	}
	git(r.t, r.work, "commit", "-q", "-m", msg)
	git(r.t, r.work, "push", "-q", "origin", "main")
	return git(r.t, r.work, "rev-parse", "HEAD")
}

// gitEnv is an environment file for the GitOps tests: components managing
// files under dir, with module paths relative to the file's folder (envs/).
func gitEnv(name, dir, content string, extra string, gatedWeb bool) string {
	web := ""
	if gatedWeb {
		web = "      autoApprove: false\n"
	}
	return fmt.Sprintf(`apiVersion: knit.dev/v1
kind: Environment
metadata: {name: %[1]s}
spec:
  teamName: shop
  envName: %[1]s
  autoApprove: true
%[4]s  components:
    - name: net
      type: terraform
      module: {source: ./modules/file}
      variables:
        - {name: path, value: %[2]s/%[1]s-net.txt}
        - {name: content, value: "%[3]s"}
    - name: web
      type: terraform
      dependsOn: [net]
%[5]s      module: {source: ./modules/file}
      variables:
        - {name: path, value: %[2]s/%[1]s-web.txt}
        - {name: content, value: "%[3]s"}
`, name, dir, content, extra, web)
}

func TestGitOpsLifecycleThroughTheServer(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	files := w.path("files")
	repo := newGitRepo(t, map[string]string{
		"envs/modules/file/main.tf": fileModule,
		"envs/dev.yaml":             gitEnv("dev", files, "v1", "", true),
		"envs/qa.yaml":              gitEnv("qa", files, "v1", "", false),
		"README.md":                 "not an environment\n",
	})
	s := w.startServer("--git-url", "file://"+repo.bare, "--git-path", "envs/", "--git-poll", "200ms")

	// Committed files are applied (web is gated, but a new environment's
	// first apply of a gated component waits too).
	s.eventually("qa applied", func() bool { e, _ := s.env("shop/qa"); return e.Status == "provisioned" })
	if got := w.read("files/qa-web.txt"); got != "v1" {
		t.Fatalf("qa-web.txt = %q", got)
	}
	s.eventually("dev waits for approval of web", func() bool { e, _ := s.env("shop/dev"); return e.Status == "awaiting-approval" })
	approve := func(env, comp string) {
		t.Helper()
		var list struct {
			Items []struct{ Env, Component, PlanChecksum string }
		}
		s.do("GET", "/api/v1/approvals?env="+env, nil, &list)
		for _, a := range list.Items {
			if a.Component == comp {
				var resp map[string]any
				if code := s.do("POST", "/api/v1/environments/"+env+"/components/"+comp+"/approve",
					map[string]string{"planChecksum": a.PlanChecksum, "reason": "looks right"}, &resp); code != 200 {
					t.Fatalf("approve %s %s: %d %v", env, comp, code, resp)
				}
				return
			}
		}
		t.Fatalf("no approval of %s in %s: %+v", comp, env, list)
	}
	approve("shop/dev", "web")
	s.eventually("dev applied after approval", func() bool { e, _ := s.env("shop/dev"); return e.Status == "provisioned" })

	// A change becomes a new revision, applied, carrying its commit.
	hash := repo.commit("qa: v2", map[string]string{"envs/qa.yaml": gitEnv("qa", files, "v2", "", false)})
	s.eventually("qa at v2", func() bool { b, _ := os.ReadFile(filepath.Join(files, "qa-net.txt")); return string(b) == "v2" })
	var revs struct {
		Items []struct {
			Number int
			Commit string
			Author string
			Errors string
		}
	}
	s.do("GET", "/api/v1/environments/shop/qa/revisions", nil, &revs)
	if len(revs.Items) != 2 || revs.Items[0].Commit != hash || revs.Items[0].Author != "t" {
		t.Fatalf("revisions of qa: %+v (want the newest from %s)", revs.Items, hash)
	}

	// An invalid file is recorded with line-numbered errors; nothing runs.
	repo.commit("qa: broken", map[string]string{"envs/qa.yaml": strings.Replace(gitEnv("qa", files, "v3", "", false), "dependsOn: [net]", "dependsOn: [nett]", 1)})
	s.eventually("the invalid revision is recorded", func() bool {
		s.do("GET", "/api/v1/environments/shop/qa/revisions", nil, &revs)
		return len(revs.Items) == 3 && revs.Items[0].Errors != ""
	})
	if !regexp.MustCompile(`envs/qa\.yaml:\d+:\d+: .*"nett" does not exist`).MatchString(revs.Items[0].Errors) {
		t.Fatalf("errors %q lack file:line:col and the problem", revs.Items[0].Errors)
	}
	if e, _ := s.env("shop/qa"); e.AppliedRevision != 2 || w.read("files/qa-net.txt") != "v2" {
		t.Fatalf("the invalid commit touched the running environment: applied %d, file %q", e.AppliedRevision, w.read("files/qa-net.txt"))
	}

	// teardown: true is gated where autoApprove is false.
	repo.commit("dev: tear down", map[string]string{"envs/dev.yaml": gitEnv("dev", files, "v1", "  teardown: true\n", true)})
	s.eventually("dev teardown waits for web's approval", func() bool {
		e, _ := s.env("shop/dev")
		return e.Status == "awaiting-approval" && e.AppliedRevision == 2
	})
	if _, err := os.Stat(filepath.Join(files, "dev-web.txt")); err != nil {
		t.Fatal("web was destroyed before approval")
	}
	approve("shop/dev", "web")
	s.eventually("dev torn down", func() bool { e, _ := s.env("shop/dev"); return e.Status == "torn-down" })
	for _, f := range []string{"dev-net.txt", "dev-web.txt"} {
		if _, err := os.Stat(filepath.Join(files, f)); err == nil {
			t.Errorf("%s survived the teardown", f)
		}
	}

	// A deleted file tears its environment down.
	repo.commit("qa: gone", map[string]string{"envs/qa.yaml": ""})
	s.eventually("qa torn down", func() bool { e, _ := s.env("shop/qa"); return e.Status == "torn-down" })

	// Every step is in the audit trail, with commit hashes.
	var audit struct {
		Items []struct{ Env, Actor, Action, Reason string }
	}
	s.do("GET", "/api/v1/audit?limit=1000", nil, &audit)
	var applyByCommit, approveByRoot, teardown bool
	for _, e := range audit.Items {
		applyByCommit = applyByCommit || e.Action == "apply" && e.Actor == "t" && strings.Contains(e.Reason, "commit "+hash[:10])
		approveByRoot = approveByRoot || e.Action == "approve" && e.Actor == "root"
		teardown = teardown || e.Action == "teardown" && e.Env == "shop/qa" && strings.Contains(e.Reason, "removed")
	}
	if !applyByCommit || !approveByRoot || !teardown {
		t.Fatalf("audit trail: apply by commit %v, approve by root %v, teardown of qa %v\n%+v", applyByCommit, approveByRoot, teardown, audit.Items)
	}
	_ = context.Background
}

func TestServerKilledMidApplyResumesOnRestart(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	events := w.path("events.log")
	env := strings.ReplaceAll(envFile("crash",
		node("first", ""),
		node("slow", "        - {name: delay, value: 6}\n      dependsOn: [first]\n"),
		node("last", "      dependsOn: [slow]\n"),
	), "EVENTS", events)
	repo := newGitRepo(t, map[string]string{"envs/modules/node/main.tf": nodeModule, "envs/crash.yaml": env})
	args := []string{"--git-url", "file://" + repo.bare, "--git-path", "envs/", "--git-poll", "200ms"}
	s := w.startServer(args...)
	waitFor(t, 2*time.Minute, func() bool { _, ok := w.eventTimes("start")["slow"]; return ok })
	if err := s.cmd.Process.Kill(); err != nil { // kill -9, mid-apply
		t.Fatal(err)
	}
	s.cmd.Wait()

	s2 := w.startServerWithToken(s.token, args...)
	s2.eventually("the environment is reconciled to completion", func() bool {
		e, _ := s2.env("qa/crash")
		return e.Status == "provisioned"
	})
	var hist struct {
		Items []struct{ Status, Source string }
	}
	// The killed run is recorded interrupted, and a later run finished it.
	out := w.ok("history", "qa/crash", "-o", "json").stdout
	if !strings.Contains(out, `"status": "interrupted"`) || !strings.Contains(out, `"source": "recovery"`) {
		t.Fatalf("history after the crash:\n%s", out)
	}
	_ = hist
	for _, c := range []string{"first", "slow", "last"} {
		if n := stateResources(t, w, "crash", c); n != 1 {
			t.Errorf("%s: %d resources in state, want 1", c, n)
		}
	}
	if n := len(w.eventTimes("end")); n != 3 {
		t.Errorf("%d components finished, want 3", n)
	}
}

// startServerWithToken starts another server process on the same data dir,
// using an existing token.
func (w *world) startServerWithToken(token string, args ...string) *server {
	w.t.Helper()
	cmd := exec.Command(knitBin, append([]string{"serve", "--listen", "127.0.0.1:0", "--log-format", "json"}, args...)...)
	cmd.Dir, cmd.Env = w.dir, w.env
	stderr, err := cmd.StderrPipe()
	if err != nil {
		w.t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		w.t.Fatal(err)
	}
	s := &server{t: w.t, w: w, cmd: cmd, token: token, log: &syncBuffer{}}
	w.t.Cleanup(func() { s.stop() })
	s.url = "http://" + waitListening(w.t, stderr, s.log)
	return s
}

func TestScheduledDriftActsUnderEachPolicy(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	files := w.path("files")
	comp := func(name, policy string) string {
		return fileComp(name, name, fmt.Sprintf("      drift: {policy: %s}\n", policy))
	}
	env := strings.Replace(envFile("sched", comp("fix", "reconcile"), comp("ask", "approve"), comp("tell", "alert")),
		"  autoApprove: true\n", "  autoApprove: true\n  drift: {schedule: \"@every 1s\"}\n", 1)
	repo := newGitRepo(t, map[string]string{"envs/modules/file/main.tf": fileModule, "envs/sched.yaml": strings.ReplaceAll(env, "FILES", files)})
	s := w.startServer("--git-url", "file://"+repo.bare, "--git-path", "envs/", "--git-poll", "200ms",
		"--drift-min-every", "100ms", "--drift-tick", "100ms")
	s.eventually("applied", func() bool { e, _ := s.env("qa/sched"); return e.Status == "provisioned" })
	for _, name := range []string{"fix", "ask", "tell"} { // changed out of band
		if err := os.WriteFile(filepath.Join(files, name+".txt"), []byte("edited"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	status := func(name string) string {
		e, _ := s.env("qa/sched")
		for _, c := range e.Components {
			if c.Name == name {
				return c.Status
			}
		}
		return ""
	}
	s.eventually("reconcile restores fix, approve holds ask, alert reports tell", func() bool {
		return w.read("files/fix.txt") == "fix" && status("ask") == "awaiting-approval" && status("tell") == "drifted"
	})
	if w.read("files/ask.txt") != "edited" || w.read("files/tell.txt") != "edited" {
		t.Fatal("a component whose policy is approve or alert was changed without a person")
	}
}

// TestAnEnvironmentLeftAloneForManyCommitsStillRuns: an environment whose
// file has not changed for more commits than the watcher keeps trees of
// still runs from its own commit's modules (its tree is kept, or written
// again).
func TestAnEnvironmentLeftAloneForManyCommitsStillRuns(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	files := w.path("files")
	repo := newGitRepo(t, map[string]string{
		"envs/modules/file/main.tf": fileModule,
		"envs/qa.yaml":              gitEnv("qa", files, "v1", "", false),
		"envs/dev.yaml":             gitEnv("dev", files, "v1", "", false),
	})
	const keep = 3
	s := w.startServer("--git-url", "file://"+repo.bare, "--git-path", "envs/", "--git-poll", "100ms", "--git-keep-trees", fmt.Sprint(keep))
	s.eventually("qa applied", func() bool { e, _ := s.env("shop/qa"); return e.Status == "provisioned" })
	for i := range keep + 3 {
		repo.commit(fmt.Sprintf("notes %d", i), map[string]string{"NOTES.md": fmt.Sprintf("note %d\n", i)})
	}
	repo.commit("dev: v2", map[string]string{"envs/dev.yaml": gitEnv("dev", files, "v2", "", false)})
	s.eventually("dev at v2", func() bool { b, _ := os.ReadFile(filepath.Join(files, "dev-net.txt")); return string(b) == "v2" })

	first := git(t, repo.work, "rev-list", "--max-parents=0", "HEAD")
	tree := filepath.Join(w.dataDir, "git", "trees", first)
	if _, err := os.Stat(tree); !os.IsNotExist(err) {
		t.Fatalf("qa's commit tree %s was not pruned (%v): the test tests nothing", tree, err)
	}
	var acc struct{ RunID string }
	if code := s.do("POST", "/api/v1/environments/shop/qa/runs", map[string]any{"kind": "drift"}, &acc); code != 202 {
		t.Fatalf("drift of qa: %d", code)
	}
	var run struct{ Status, Error string }
	s.eventually("qa's drift ends", func() bool {
		s.do("GET", "/api/v1/runs/"+acc.RunID, nil, &run)
		return run.Status != "queued" && run.Status != "running"
	})
	if run.Status != "succeeded" {
		t.Fatalf("drift of qa, unchanged since %d commits: %s %s\nserver log:\n%s", keep+4, run.Status, run.Error, s.log)
	}
	if _, err := os.Stat(filepath.Join(tree, "envs", "modules", "file", "main.tf")); err != nil {
		t.Errorf("qa's commit tree was not written again: %v", err)
	}
}
