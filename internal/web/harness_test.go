package web_test

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"knit.dev/knit/internal/adapters"
	"knit.dev/knit/internal/controller/runqueue"
	"knit.dev/knit/internal/knit"
	"knit.dev/knit/internal/server"
	"knit.dev/knit/internal/spec"
	"knit.dev/knit/internal/testtools"
)

// world is a real knit serve on loopback over a fresh data dir, with a
// token per role.
type world struct {
	t      testing.TB
	dir    string
	k      *knit.Knit
	srv    *server.Server
	url    string
	tokens map[string]string // role → secret
}

func newWorld(t testing.TB, cfg adapters.Config) *world {
	t.Helper()
	w := &world{t: t, dir: t.TempDir(), tokens: map[string]string{}}
	cfg.Config.DataDir = filepath.Join(w.dir, "data")
	ctx := context.Background()
	k, err := adapters.Open(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	w.k = k
	t.Cleanup(func() { k.Close() })
	for _, role := range []string{"viewer", "operator", "admin"} {
		secret, _, err := knit.NewCreateToken(k, role+"-1", role, nil, "test").Run(ctx)
		if err != nil {
			t.Fatal(err)
		}
		w.tokens[role] = secret
	}
	// The server and its run queue, as knit serve wires them.
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	q := runqueue.New(k, runqueue.Config{Logger: log})
	s, err := server.New(k, server.Config{Listen: "127.0.0.1:0", Logger: log, Queue: q})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Open(ctx); err != nil {
		t.Fatal(err)
	}
	qctx, stop := context.WithCancel(context.Background())
	stopped := make(chan struct{})
	go func() { defer close(stopped); _ = q.Run(qctx) }()
	t.Cleanup(func() {
		stop()
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		select {
		case <-stopped:
		case <-ctx.Done():
		}
		s.Close(ctx)
	})
	w.srv, w.url = s, "http://"+s.Addr()
	return w
}

// apply writes files into a folder named after the environment and applies
// env.yaml from it through the library; the run's outcome is not checked
// (some environments fail or stop at approvals on purpose).
func (w *world) apply(name string, files map[string]string) {
	w.t.Helper()
	dir := filepath.Join(w.dir, "envs", name)
	testtools.WriteFiles(w.t, dir, files)
	env, diags := spec.Load(filepath.Join(dir, "env.yaml"))
	if diags.HasErrors() {
		w.t.Fatalf("%s: %v", name, diags)
	}
	if _, err := knit.NewRun(w.k, knit.RunRequest{Kind: "apply", Env: env, Actor: "test", Source: "test",
		Origin: filepath.Join(dir, "env.yaml")}).Run(context.Background()); err != nil && !strings.Contains(err.Error(), "failed") {
		w.t.Logf("apply %s: %v", name, err)
	}
}

// client is an HTTP client signed in to the dashboard with a role's token.
func (w *world) client(role string) *http.Client {
	w.t.Helper()
	jar, _ := cookiejar.New(nil)
	c := &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := c.PostForm(w.url+"/login", url.Values{"token": {w.tokens[role]}, "next": {"/"}})
	if err != nil {
		w.t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusSeeOther {
		w.t.Fatalf("login as %s: %s", role, resp.Status)
	}
	return c
}

var csrfField = regexp.MustCompile(`name="csrf" value="([0-9a-f]+)"`)

// get fetches a page and returns its body.
func get(t *testing.T, c *http.Client, u string) (int, string) {
	t.Helper()
	resp, err := c.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func writeFileAt(t *testing.T, path string, data []byte) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
}
