package promotion

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"knit.dev/knit/internal/controller/clock"
	"knit.dev/knit/internal/gitwatch"
	"knit.dev/knit/internal/knit"
	"knit.dev/knit/internal/runner"
	"knit.dev/knit/internal/runner/fake"
	"knit.dev/knit/internal/spec"
	"knit.dev/knit/internal/store/sqlite"
	"knit.dev/knit/internal/view"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// runQueue runs each request at once, in the caller's goroutine, and
// remembers which environments it ran.
type runQueue struct {
	k    *knit.Knit
	mu   sync.Mutex
	envs []string
	n    int
}

func (q *runQueue) EnqueueWith(req knit.RunRequest, env string, _ func(error)) (string, error) {
	q.mu.Lock()
	q.n++
	req.RunID = "run-" + string(rune('a'+q.n))
	q.envs = append(q.envs, env)
	q.mu.Unlock()
	// As with the real queue, a run that fails is told by its record,
	// not by the enqueue.
	_, _ = knit.NewRun(q.k, req).Run(context.Background())
	return req.RunID, nil
}

const (
	tmpl = `apiVersion: knit.dev/v1
kind: EnvironmentTemplate
spec:
  parameters:
    - {name: version, type: string, promote: true}
  components:
    - {name: app, type: script, script: {apply: "echo ${param.version}"}}
`
	// prod opens at 01:00 UTC for an hour; dev soaks 10 minutes.
	pipeline = `apiVersion: knit.dev/v1
kind: Pipeline
metadata: {name: web}
spec:
  teamName: shop
  stages:
    - {name: dev, file: ../stages/dev.yaml, soak: 10m}
    - name: prod
      file: ../stages/prod.yaml
      windows: {allow: [{schedule: "0 1 * * *", duration: 1h}]}
`
)

func stageFile(name string) string {
	return "apiVersion: knit.dev/v1\nkind: Environment\nspec:\n  teamName: shop\n  envName: " + name +
		"\n  autoApprove: true\n  template: {path: ../templates/web.yaml}\n  parameters: {version: \"1\"}\n"
}

func gitRepo(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	bare, work := filepath.Join(dir, "repo.git"), filepath.Join(dir, "work")
	git := func(in string, args ...string) {
		t.Helper()
		cmd := exec.Command("git", args...)
		cmd.Dir = in
		cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=alice", "GIT_AUTHOR_EMAIL=a@example.com",
			"GIT_COMMITTER_NAME=alice", "GIT_COMMITTER_EMAIL=a@example.com", "GIT_CONFIG_GLOBAL=/dev/null")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	git(dir, "init", "-q", "--bare", "-b", "main", bare)
	git(dir, "init", "-q", "-b", "main", work)
	for name, content := range files {
		p := filepath.Join(work, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	git(work, "add", "-A")
	git(work, "commit", "-q", "-m", "v1")
	git(work, "push", "-q", bare, "main")
	return bare
}

// newController is a controller on fc over a real git repository of
// files and a SQLite store, running each apply at once.
func newController(t *testing.T, fc *clock.Fake, files map[string]string) (*knit.Knit, *Controller, *runQueue) {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Fatal("git is needed")
	}
	ctx := context.Background()
	dir := t.TempDir()
	st, err := sqlite.Open(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	k, err := knit.Open(ctx, knit.Config{DataDir: dir, Store: st, CloseStore: true, Now: fc.Now,
		Runners: map[string]runner.Runner{spec.TypeScript: &fake.Runner{}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { k.Close() })
	bare := gitRepo(t, files)
	q := &runQueue{k: k}
	c := New(k, q, Config{Git: gitwatch.Config{URL: "file://" + bare, CacheDir: filepath.Join(dir, "git")},
		Files: []string{"pipelines/web.yaml"}, Clock: fc, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err := c.open(); err != nil {
		t.Fatal(err)
	}
	return k, c, q
}

// TestControllerSoaksAndWaitsForTheWindow drives the controller on a fake
// clock over a real git repository and SQLite store: the commit's
// release enters dev and is verified; it soaks 10 minutes, then waits
// for prod's window (WindowClosed) with nothing applied to prod, and
// enters prod when the window opens at 01:00.
func TestControllerSoaksAndWaitsForTheWindow(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Fatal("git is needed")
	}
	ctx := context.Background()
	fc := clock.NewFake(t0)
	k, c, q := newController(t, fc, map[string]string{"templates/web.yaml": tmpl, "stages/dev.yaml": stageFile("dev"),
		"stages/prod.yaml": stageFile("prod"), "pipelines/web.yaml": pipeline})
	prod := func() *view.Waiting {
		t.Helper()
		p, err := knit.NewRecords(k).PipelineStatus(ctx, "web")
		if err != nil {
			t.Fatal(err)
		}
		return p.Stages[1].Waiting
	}

	c.Step(ctx) // the release enters dev; its run ends at once
	c.Step(ctx) // and is followed: verified at t0
	if w := prod(); w == nil || w.Reason != view.WaitSoaking || !w.Until.Equal(t0.Add(10*time.Minute)) {
		t.Fatalf("prod at t0: %+v, want Soaking until t0+10m", w)
	}
	fc.Advance(10 * time.Minute)
	c.Step(ctx)
	if w := prod(); w == nil || w.Reason != view.WaitWindowClosed || !w.Until.Equal(t0.Add(time.Hour)) {
		t.Fatalf("prod after the soak: %+v, want WindowClosed until 01:00", w)
	}
	fc.Advance(49 * time.Minute)
	c.Step(ctx)
	if got := strings.Join(q.envs, " "); got != "shop/dev" {
		t.Fatalf("runs before the window opened: %s, want shop/dev alone", got)
	}
	fc.Advance(time.Minute)
	c.Step(ctx) // 01:00: the window is open
	c.Step(ctx)
	if got := strings.Join(q.envs, " "); got != "shop/dev shop/prod" {
		t.Fatalf("runs: %s, want shop/dev then shop/prod", got)
	}
	p, err := knit.NewRecords(k).PipelineStatus(ctx, "web")
	if err != nil {
		t.Fatal(err)
	}
	if cur := p.Stages[1].Current; cur == nil || cur.Release != p.Stages[0].Current.Release || !cur.VerifiedAt.Equal(t0.Add(time.Hour)) {
		t.Fatalf("prod holds %+v, want dev's release verified at 01:00", cur)
	}
	rs, err := knit.NewRecords(k).Releases(ctx, "web", "prod")
	if err != nil || len(rs) != 1 || rs[0].Author != "alice" || rs[0].AuthorVerified || rs[0].Message != "v1" || string(rs[0].Params) != `{"version":"1"}` {
		t.Fatalf("releases in prod: %+v, %v", rs, err)
	}
}

// TestAPausedRolloutWaitsForAPerson: dev's rollout policy is onFailure:
// pause and its check fails: the release stays in dev, Paused (not
// verified, not failed), and nothing moves on; once a person accepts the
// rollout (knit approve) the release is verified there.
func TestAPausedRolloutWaitsForAPerson(t *testing.T) {
	ctx := context.Background()
	fc := clock.NewFake(t0)
	probe := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, _ *http.Request) {
		rw.WriteHeader(http.StatusServiceUnavailable)
	}))
	defer probe.Close()
	checked := strings.Replace(tmpl, `script: {apply: "echo ${param.version}"}}`,
		`script: {apply: "echo ${param.version}"}, health: [{name: up, http: {url: "`+probe.URL+`"}, count: 1, interval: 10ms}]}`, 1)
	dev := strings.Replace(stageFile("dev"), "  autoApprove: true\n", "  autoApprove: true\n  rollout: {onFailure: pause}\n", 1)
	k, c, q := newController(t, fc, map[string]string{"templates/web.yaml": checked, "stages/dev.yaml": dev,
		"stages/prod.yaml": stageFile("prod"), "pipelines/web.yaml": pipeline})
	devStage := func() view.Stage {
		t.Helper()
		p, err := knit.NewRecords(k).PipelineStatus(ctx, "web")
		if err != nil {
			t.Fatal(err)
		}
		return p.Stages[0]
	}

	c.Step(ctx) // the release enters dev; its check fails; the rollout pauses
	c.Step(ctx)
	c.Step(ctx)
	if st := devStage(); st.Current != nil || st.Waiting == nil || st.Waiting.Reason != view.WaitPaused ||
		!strings.Contains(st.Waiting.Message, "knit approve shop/dev") {
		f, _ := k.Facts(ctx, "web")
		e, _ := knit.NewRecords(k).EnvironmentRecord(ctx, "shop/dev")
		t.Fatalf("dev while its rollout is paused: current %+v, waiting %+v\n%+v\n%+v", st.Current, st.Waiting, f.States, e)
	}
	if _, err := knit.NewRollbackStage(k, knit.StageOptions{Pipeline: "web", Stage: "dev", Actor: "bob", Reason: ""}).Run(ctx); err == nil || !strings.Contains(err.Error(), "paused") {
		t.Fatalf("a pipeline rollback of a paused stage: %v", err)
	}
	if _, err := knit.NewAccept(k, "shop/dev", "bob", "looks fine").Run(ctx); err != nil {
		t.Fatal(err)
	}
	c.Step(ctx)
	if st := devStage(); st.Current == nil || st.Waiting != nil && st.Waiting.Reason == view.WaitPaused {
		t.Fatalf("dev once its rollout was accepted: current %+v, waiting %+v", st.Current, st.Waiting)
	}
	if got := strings.Join(q.envs, " "); got != "shop/dev" {
		t.Fatalf("runs: %s, want shop/dev alone (prod waits for its window)", got)
	}
}
