//go:build unix

package procexec_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"knit.dev/knit/internal/procexec"
)

// hangGuard bounds every wait in these tests. It is no claim about speed:
// it only turns a process that is never killed into a failure, not a hang.
const hangGuard = 30 * time.Second

// TestCancelKillsTheWholeGroupAfterGrace leaves, at cancellation, a
// grandchild that ignores SIGINT, with the shell either ignoring SIGINT too
// or exiting on it (then Wait returns at once and only the group kill can
// reach the grandchild). Grace later nothing of the group is left.
func TestCancelKillsTheWholeGroupAfterGrace(t *testing.T) {
	for _, tc := range []struct{ name, trap string }{
		{"shell ignores SIGINT", "trap '' INT;"},
		{"shell exits on SIGINT", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			// The grandchild writes no pipe of the command's, so nothing but a
			// kill of the group ends it.
			script := tc.trap + ` (trap '' INT; exec sleep 1000) >/dev/null 2>&1 </dev/null &
				echo $! > pid.tmp && mv pid.tmp pid
				wait`
			cmd := procexec.CommandGrace(ctx, time.Second, "sh", "-c", script)
			cmd.Dir = dir
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			pgid := cmd.Process.Pid
			// Should the test fail, leave nothing behind.
			t.Cleanup(func() { _ = syscall.Kill(-pgid, syscall.SIGKILL) })
			grandchild := waitForPID(t, filepath.Join(dir, "pid"))

			cancel()
			waited := make(chan error, 1)
			go func() { waited <- cmd.Wait() }()
			select {
			case err := <-waited:
				if err == nil {
					t.Error("Wait after cancellation returned nil")
				}
			case <-time.After(hangGuard):
				t.Fatal("Wait did not return after cancellation")
			}
			deadline := time.Now().Add(hangGuard)
			for groupExists(pgid) {
				if time.Now().After(deadline) {
					t.Fatalf("process group %d (grandchild %d) still exists", pgid, grandchild)
				}
				time.Sleep(20 * time.Millisecond)
			}
			if procexec.Alive(grandchild) {
				t.Errorf("grandchild %d is alive", grandchild)
			}
		})
	}
}

// TestCancelLeavesTheGraceToCleanUp: a command that handles SIGINT gets to
// finish its cleanup before anything is killed.
func TestCancelLeavesTheGraceToCleanUp(t *testing.T) {
	dir := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	script := `trap 'sleep 0.2; echo done > cleaned; exit 1' INT
		touch ready
		while :; do sleep 0.05; done`
	cmd := procexec.CommandGrace(ctx, hangGuard, "sh", "-c", script)
	cmd.Dir = dir
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) })
	waitForFile(t, filepath.Join(dir, "ready"))
	cancel()
	if err := cmd.Wait(); err == nil {
		t.Error("Wait after cancellation returned nil")
	}
	if b, err := os.ReadFile(filepath.Join(dir, "cleaned")); err != nil || string(b) != "done\n" {
		t.Errorf("cleanup did not run: %q %v", b, err)
	}
}

func TestAlive(t *testing.T) {
	if !procexec.Alive(os.Getpid()) {
		t.Error("this process is not alive")
	}
	for _, pid := range []int{0, -1} {
		if procexec.Alive(pid) {
			t.Errorf("pid %d is alive", pid)
		}
	}
	cmd := procexec.Command(context.Background(), "true")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	if procexec.Alive(cmd.Process.Pid) {
		t.Errorf("exited and reaped pid %d is alive", cmd.Process.Pid)
	}
}

func groupExists(pgid int) bool {
	err := syscall.Kill(-pgid, 0)
	return !errors.Is(err, syscall.ESRCH)
}

func waitForFile(t *testing.T, path string) []byte {
	t.Helper()
	deadline := time.Now().Add(hangGuard)
	for {
		b, err := os.ReadFile(path)
		if err == nil {
			return b
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s never appeared", path)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func waitForPID(t *testing.T, path string) int {
	t.Helper()
	pid, err := strconv.Atoi(strings.TrimSpace(string(waitForFile(t, path))))
	if err != nil {
		t.Fatal(err)
	}
	return pid
}
