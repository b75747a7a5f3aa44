package routertest

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"knit.dev/knit/internal/testtools"
)

// Run is the folder of one test's routers, apps and Prometheus: each
// keeps its state (config, pid file, logs) in a folder of its own under
// Dir. An environment built from the examples takes Dir as its run_dir.
// When the test ends, every process with a pid file under Dir is killed,
// whether the test passed, failed or panicked, and whoever started it (a
// Go helper here, or a knit component the test applied).
type Run struct {
	// Dir is short (under the system's temp folder, not the test's
	// longer one): HAProxy's unix socket lies in it, and a socket path is
	// at most 107 bytes.
	Dir string
	// Path is the PATH the scripts run with: the tools' folders first.
	Path  string
	root  string
	count int
}

// NewRun makes t's run folder, and kills what runs from it when t ends.
func NewRun(t testing.TB) *Run {
	t.Helper()
	r := &Run{Path: ToolPath(t), root: testtools.ModuleRoot(t)}
	dir, err := os.MkdirTemp("", "knit-rt-")
	if err != nil {
		t.Fatal(err)
	}
	r.Dir = dir
	t.Cleanup(func() {
		KillUnder(dir)
		os.RemoveAll(dir)
	})
	return r
}

// folder returns a new folder under Dir named for what runs in it.
func (r *Run) folder(t testing.TB, what string) string {
	t.Helper()
	r.count++
	d := filepath.Join(r.Dir, fmt.Sprintf("%s-%d", what, r.count))
	if err := os.MkdirAll(d, 0o700); err != nil {
		t.Fatal(err)
	}
	return d
}

// script runs one of the examples' component scripts (its path relative
// to examples/) with args, an explicit environment (PATH, HOME and env),
// and fails t with its output when it fails.
func (r *Run) script(t testing.TB, rel string, env []string, args ...string) {
	t.Helper()
	cmd := exec.Command("bash", append([]string{filepath.Join(r.root, "examples", filepath.FromSlash(rel))}, args...)...)
	cmd.Env = append([]string{"PATH=" + r.Path, "HOME=" + r.Dir, "LANG=C"}, env...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s %s: %v\n%s", rel, strings.Join(args, " "), err, out.String())
	}
}

// readAddr reads the HOST:PORT a script wrote into dir/addr.
func readAddr(t testing.TB, dir string) string {
	t.Helper()
	return strings.TrimSpace(readFile(t, filepath.Join(dir, "addr")))
}

func readFile(t testing.TB, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// KillUnder kills every process that a pid file under dir names (files
// named pid or *.pid) and whose command line mentions dir (so a pid the
// system gave to another process since is left alone), with its process
// group: nginx's workers, a daemon's children. It waits, boundedly, until
// they are gone.
func KillUnder(dir string) {
	var pids []int
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || !(d.Name() == "pid" || strings.HasSuffix(d.Name(), ".pid")) {
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return nil
		}
		pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
		if err != nil || pid <= 1 || !mentions(pid, dir) {
			return nil
		}
		pids = append(pids, pid)
		return nil
	})
	for _, pid := range pids {
		if pgid, err := syscall.Getpgid(pid); err == nil && pgid == pid {
			syscall.Kill(-pid, syscall.SIGKILL)
		}
		syscall.Kill(pid, syscall.SIGKILL)
	}
	deadline := time.Now().Add(30 * time.Second)
	for _, pid := range pids {
		for alive(pid) && time.Now().Before(deadline) {
			time.Sleep(20 * time.Millisecond)
		}
	}
}

// mentions reports whether process pid's command line holds dir.
func mentions(pid int, dir string) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	return err == nil && bytes.Contains(b, []byte(dir))
}

// alive reports whether pid is a process that has not exited (a zombie
// has: it only waits for its parent to read its status).
func alive(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	s := string(b)
	if i := strings.LastIndexByte(s, ')'); i >= 0 && i+2 < len(s) {
		return s[i+2] != 'Z'
	}
	return true
}
