package routertest

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestProcessesDieWithAPanickingTest: a test that starts an app, nginx
// and Prometheus and then panics leaves none of them running: its
// Cleanup kills every process of its run folder. (The panicking test runs
// in a child test process, which writes the pids it started where this
// test reads them.)
func TestProcessesDieWithAPanickingTest(t *testing.T) {
	if out := os.Getenv("ROUTERTEST_PANIC_OUT"); out != "" {
		panicking(t, out)
		return
	}
	Tool(t, "nginx")
	out := filepath.Join(t.TempDir(), "pids")
	cmd := exec.Command(os.Args[0], "-test.run", "^TestProcessesDieWithAPanickingTest$", "-test.count=1")
	cmd.Env = append(os.Environ(), "ROUTERTEST_PANIC_OUT="+out)
	b, err := cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(b), "panic: on purpose") {
		t.Fatalf("the child test did not panic: %v\n%s", err, b)
	}
	data, err := os.ReadFile(out)
	if err != nil {
		t.Fatalf("the child wrote no pids: %v\n%s", err, b)
	}
	pids := strings.Fields(string(data))
	if len(pids) < 3 {
		t.Fatalf("pids %q", pids)
	}
	for _, p := range pids {
		pid, _ := strconv.Atoi(p)
		if alive(pid) {
			t.Errorf("process %d outlived the panicking test", pid)
		}
	}
}

// panicking starts processes, writes their pids (nginx's master and
// worker too) to out and panics.
func panicking(t *testing.T, out string) {
	r := NewRun(t)
	v1 := r.App(t, "v1", 0)
	r.Nginx(t, v1.Addr, v1.Addr, 0)
	r.Prometheus(t)
	var pids []string
	filepath.WalkDir(r.Dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && (d.Name() == "pid" || strings.HasSuffix(d.Name(), ".pid")) {
			b, _ := os.ReadFile(p)
			pids = append(pids, strings.TrimSpace(string(b)))
		}
		return nil
	})
	master, _ := os.ReadFile(filepath.Join(r.Dir, "nginx-2", "nginx.pid"))
	matches, _ := filepath.Glob("/proc/[0-9]*/status")
	for _, m := range matches {
		if b, err := os.ReadFile(m); err == nil && strings.Contains(string(b), "\nPPid:\t"+strings.TrimSpace(string(master))+"\n") {
			pids = append(pids, strings.Split(m, "/")[2])
		}
	}
	if err := os.WriteFile(out, []byte(strings.Join(pids, "\n")), 0o600); err != nil {
		t.Fatal(err)
	}
	panic("on purpose")
}
