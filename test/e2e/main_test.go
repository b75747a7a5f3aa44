// Package e2e runs the real knit binary against the real OpenTofu and
// providers that `make tools` installs, in temporary folders.
//
// Tests run in parallel (make test passes -parallel 4; most of a test is
// waiting on tofu). Rule for a new test: call t.Parallel() first, unless it
// must run alone, and then say why in a comment where the call would be.
// A parallel test keeps to what is its own:
//   - its folder, data dir, HOME and store: newWorld (newKubeWorld adds a
//     namespace of the shared API server);
//   - its repositories: newGitRepo; its servers on port 0: startServer,
//     startReplicas; never a fixed port;
//   - its variables in w.env or cmd.Env: never os.Setenv or t.Setenv (which
//     t.Parallel forbids), never os.Chdir (set cmd.Dir);
//   - no package-level variable it changes. Cluster-scoped Kubernetes
//     objects are shared by every test: hold a lock while using them, as
//     the CRD tests do (holdCRDs).
//
// Wait on events (a file the tool writes, a line in a log: waitFor,
// eventually), never on time: a provisioner that must be "long enough to
// interrupt" waits for a file the test writes, or is cut short.
package e2e

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"knit.dev/knit/internal/keyfile"
	"knit.dev/knit/internal/kubetest"
	"knit.dev/knit/internal/store"
	"knit.dev/knit/internal/store/postgres"
	"knit.dev/knit/internal/store/sqlite"
	"knit.dev/knit/internal/testtools/pgtest"
)

var (
	knitBin string // built once by TestMain
	tofuBin string // "" when not installed
	repo    string
)

func TestMain(m *testing.M) {
	if file := os.Getenv(rssLauncherEnv); file != "" {
		os.Exit(launchMeasured(file))
	}
	os.Exit(run(m))
}

func run(m *testing.M) int {
	var err error
	repo, err = repoRoot()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	tmp, err := os.MkdirTemp("", "knit-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(tmp)
	knitBin = filepath.Join(tmp, "knit")
	// knit-kube beside knit runs the helm and manifests components.
	build := exec.Command("go", "build", "-o", tmp+string(filepath.Separator), "./cmd/knit", "./cmd/knit-kube")
	build.Dir, build.Stdout, build.Stderr = repo, os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "build knit and knit-kube:", err)
		return 1
	}
	if p := filepath.Join(repo, ".tools", "bin", "tofu"); isExecutable(p) {
		tofuBin = p
	}
	defer kubetest.Stop() // the API server of the Kubernetes tests, if one started
	return m.Run()
}

func repoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("go.mod not found above the test's folder")
		}
		dir = parent
	}
}

func isExecutable(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.Mode()&0o111 != 0
}

// requireTofu fails in CI (or under make, KNIT_REQUIRE_TOOLS=1) and skips
// elsewhere when OpenTofu has not been installed.
func requireTofu(t *testing.T) {
	t.Helper()
	if testing.Short() {
		t.Skip("end-to-end test: not in -short mode")
	}
	if tofuBin != "" {
		return
	}
	if os.Getenv("CI") == "true" || os.Getenv("KNIT_REQUIRE_TOOLS") == "1" {
		t.Fatal("OpenTofu is not installed in .tools: run make tools")
	}
	t.Skip("OpenTofu is not installed in .tools: run make tools")
}

// world is one test's folder: environment files, modules, and knit's data dir.
type world struct {
	t       *testing.T
	dir     string
	dataDir string
	env     []string
	// apart gives each replica startReplicas starts a host name of its
	// own (KNIT_HOST), as replicas on different machines have.
	apart bool
}

func newWorld(t *testing.T) *world {
	requireTofu(t)
	dir := t.TempDir()
	w := &world{t: t, dir: dir, dataDir: filepath.Join(dir, ".knit")}
	w.env = append(os.Environ(),
		"KNIT_DATA_DIR="+w.dataDir,
		"KNIT_TF_BINARY="+tofuBin,
		"KNIT_ACTOR=e2e",
		"HOME="+dir, // keep ~/.terraform.d and the like out of the real home
		"XDG_CACHE_HOME="+filepath.Join(dir, ".cache"),
	)
	// KNIT_E2E_STORE=postgres runs the world's knit on a PostgreSQL store
	// of its own (a throwaway cluster) instead of SQLite in the data dir.
	if os.Getenv("KNIT_E2E_STORE") == "postgres" {
		w.env = append(w.env, "KNIT_STORE_DSN="+pgtest.Start(t).DB(t))
	}
	return w
}

// dsn is the PostgreSQL store the world's knit uses (KNIT_STORE_DSN in
// its environment), "" for SQLite in the data dir.
func (w *world) dsn() string {
	dsn := ""
	for _, kv := range w.env {
		if v, ok := strings.CutPrefix(kv, "KNIT_STORE_DSN="); ok {
			dsn = v // the last one wins, as in the process's environment
		}
	}
	return dsn
}

// openStore opens the world's store as its knit does, for a test to read
// records; it is closed when the test ends.
func (w *world) openStore() store.Store {
	w.t.Helper()
	ctx := context.Background()
	var st store.Store
	var err error
	if dsn := w.dsn(); dsn != "" {
		var key []byte
		if key, err = keyfile.Load(w.dataDir); err == nil {
			st, err = postgres.Open(ctx, dsn, key)
		}
	} else {
		st, err = sqlite.Open(ctx, w.dataDir)
	}
	if err != nil {
		w.t.Fatal(err)
	}
	w.t.Cleanup(func() { st.Close() })
	return st
}

// write creates files (path → content) under the world's folder.
func (w *world) write(files map[string]string) {
	w.t.Helper()
	for name, content := range files {
		p := filepath.Join(w.dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			w.t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			w.t.Fatal(err)
		}
	}
}

func (w *world) path(name string) string { return filepath.Join(w.dir, name) }

type result struct {
	stdout, stderr string
	code           int
}

// knit runs the knit binary in the world's folder.
func (w *world) knit(args ...string) result {
	w.t.Helper()
	return w.knitWith(nil, args...)
}

// knitWith runs the knit binary with extra environment variables.
func (w *world) knitWith(extra []string, args ...string) result {
	w.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, knitBin, args...)
	cmd.Dir, cmd.Env = w.dir, append(append([]string{}, w.env...), extra...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		w.t.Fatalf("knit %s: %v", strings.Join(args, " "), err)
	}
	return result{stdout: out.String(), stderr: errb.String(), code: code}
}

// ok runs knit and fails the test unless it exits 0.
func (w *world) ok(args ...string) result {
	w.t.Helper()
	r := w.knit(args...)
	if r.code != 0 {
		w.t.Fatalf("knit %s: exit %d\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), r.code, r.stdout, r.stderr)
	}
	return r
}

func (w *world) read(name string) string {
	w.t.Helper()
	b, err := os.ReadFile(w.path(name))
	if err != nil {
		w.t.Fatal(err)
	}
	return string(b)
}

// git runs git in dir with a fixed identity.
func git(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com",
		"GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com", "GIT_CONFIG_GLOBAL=/dev/null")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out))
}
