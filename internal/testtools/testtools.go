// Package testtools finds the real tools that end-to-end tests drive (the
// OpenTofu that `make tools` installs into .tools, the git binary) and offers
// small helpers around them. Import it from _test files only.
//
// A missing tool skips the test with a message naming `make tools`, except
// when CI=true or KNIT_REQUIRE_TOOLS=1 (as `make test` sets): then it fails.
// Under `go test -short` tests that need tools are skipped.
package testtools

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"hash/fnv"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"knit.dev/knit/internal/runner/terraform"
)

// ModuleRoot returns the folder holding go.mod, found by walking up from the
// test's working directory. It fails the test when there is none.
func ModuleRoot(t testing.TB) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("testtools: no go.mod above the working directory")
		}
		dir = parent
	}
}

// Tofu returns the OpenTofu binary installed by `make tools`
// (<module root>/.tools/bin/tofu, with .tools/tofurc as its CLI config, which
// points at the offline provider mirror). It skips or fails the test when the
// binary is absent, see the package comment.
func Tofu(t testing.TB) terraform.Binary {
	t.Helper()
	skipShort(t, "tofu")
	root := ModuleRoot(t)
	bin := filepath.Join(root, ".tools", "bin", "tofu")
	if st, err := os.Stat(bin); err != nil || st.IsDir() {
		missing(t, "tofu not found: run make tools")
	}
	b := terraform.Binary{Path: bin}
	if rc := filepath.Join(root, ".tools", "tofurc"); fileExists(rc) {
		b.CLIConfig = rc
	}
	return b
}

// Git returns the path of the git binary, skipping or failing the test when
// there is none.
func Git(t testing.TB) string {
	t.Helper()
	skipShort(t, "git")
	p, err := exec.LookPath("git")
	if err != nil {
		missing(t, "git not found: install git (Debian package git)")
	}
	return p
}

// RunGit runs git in dir with a fixed identity and default branch "main", so
// tests can build repositories without any global git configuration. It
// fails the test on error and returns the trimmed stdout.
func RunGit(t testing.TB, dir string, args ...string) string {
	t.Helper()
	full := append([]string{
		"-c", "user.name=knit test", "-c", "user.email=test@knit.dev",
		"-c", "init.defaultBranch=main", "-c", "commit.gpgsign=false", "-c", "tag.gpgsign=false",
	}, args...)
	cmd := exec.Command(Git(t), full...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null", "GIT_TERMINAL_PROMPT=0")
	out, err := cmd.Output()
	if err != nil {
		var stderr string
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = string(ee.Stderr)
		}
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, stderr)
	}
	return strings.TrimSpace(string(out))
}

// WriteFiles writes files (slash-separated path relative to dir → content),
// creating folders as needed.
func WriteFiles(t testing.TB, dir string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// Required reports whether missing tools fail tests rather than skip them.
func Required() bool {
	return os.Getenv("CI") == "true" || os.Getenv("KNIT_REQUIRE_TOOLS") == "1"
}

func missing(t testing.TB, msg string) {
	t.Helper()
	if Required() {
		t.Fatal(msg)
	}
	t.Skip(msg)
}

func skipShort(t testing.TB, tool string) {
	t.Helper()
	if testing.Short() {
		t.Skipf("-short: skipping a test that runs %s", tool)
	}
}

func fileExists(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.Mode().IsRegular()
}

// Log is a log a test may read while a tool writes to it from other
// goroutines.
type Log struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *Log) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

// Len is how many bytes were written so far.
func (l *Log) Len() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Len()
}

func (l *Log) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

// FilesHolding reads every file under dir and returns, for each of texts,
// the files (relative to dir) that hold it, and how many files it read. A
// walk that reads few files proves little: callers check the count.
func FilesHolding(t testing.TB, dir string, texts ...string) (map[string][]string, int) {
	t.Helper()
	holding, read := map[string][]string{}, 0
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		if st, err := os.Stat(p); err == nil && st.IsDir() {
			return nil // a link to a folder (the plugin cache's): its target is walked where it lies
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		read++
		rel, _ := filepath.Rel(dir, p)
		for _, s := range texts {
			if bytes.Contains(data, []byte(s)) {
				holding[s] = append(holding[s], rel)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return holding, read
}

// DownURL returns an http URL on 127.0.0.1 of a receiver that is down: it
// closes every connection at once, so each request to it fails. (A port
// nothing listens on would not do: another test process may take it
// meanwhile and receive requests meant to fail.)
func DownURL(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	t.Cleanup(func() { ln.Close() })
	return "http://" + ln.Addr().String()
}

var knitKube struct {
	once sync.Once
	path string
	err  error
}

// KnitKube builds cmd/knit-kube (the process helm and manifests
// components run in) once per test process, into the module's .tools
// cache, and returns its path for adapters.Tools.KubeRunner.
func KnitKube(t testing.TB) string {
	t.Helper()
	root := ModuleRoot(t)
	knitKube.once.Do(func() {
		dir := filepath.Join(root, ".tools", "test-bin")
		if knitKube.err = os.MkdirAll(dir, 0o755); knitKube.err != nil {
			return
		}
		// Built beside, then renamed: test processes of other packages
		// may build it at the same time.
		tmp, err := os.CreateTemp(dir, "knit-kube-*")
		if err != nil {
			knitKube.err = err
			return
		}
		tmp.Close()
		cmd := exec.Command("go", "build", "-o", tmp.Name(), "./cmd/knit-kube")
		cmd.Dir = root
		if out, err := cmd.CombinedOutput(); err != nil {
			os.Remove(tmp.Name())
			knitKube.err = fmt.Errorf("go build ./cmd/knit-kube: %v\n%s", err, out)
			return
		}
		// One per checkout: .tools may be shared by worktrees.
		h := fnv.New32a()
		h.Write([]byte(root))
		knitKube.path = filepath.Join(dir, fmt.Sprintf("knit-kube-%08x", h.Sum32()))
		knitKube.err = os.Rename(tmp.Name(), knitKube.path)
	})
	if knitKube.err != nil {
		t.Fatal(knitKube.err)
	}
	return knitKube.path
}

// FreePort returns a loopback TCP port free at the time of the call; a
// server started on it may still lose it to another process, so callers
// retry a start that fails.
func FreePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// RandomHex returns 32 random hex digits (a password, a secret).
func RandomHex(t testing.TB) string {
	t.Helper()
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b)
}
