package procexec

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestAwaitExitReturnsOnceTheProcessHasExitedAndLeavesItToWait: the
// process is a zombie when awaitExit returns (exited, not reaped), so Wait
// still gets its exit status.
func TestAwaitExitReturnsOnceTheProcessHasExitedAndLeavesItToWait(t *testing.T) {
	cmd := exec.Command("sh", "-c", "sleep 0.3; exit 7")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pid := cmd.Process.Pid
	if s := procState(pid); s == "Z" {
		t.Fatalf("the process is a zombie before it could have exited")
	}
	awaitExit(pid, 0, nil)
	if s := procState(pid); s != "Z" {
		t.Errorf("after awaitExit the process is in state %q, want Z (exited, not yet reaped)", s)
	}
	var ee *exec.ExitError
	if err := cmd.Wait(); !errors.As(err, &ee) || ee.ExitCode() != 7 {
		t.Fatalf("Wait = %v, want exit status 7", err)
	}
}

// TestRunReportsExitStatusOutputAndCancellation: Run behaves as cmd.Run.
func TestRunReportsExitStatusOutputAndCancellation(t *testing.T) {
	var out strings.Builder
	cmd := Command(context.Background(), "sh", "-c", "echo hello; exit 3")
	cmd.Stdout = &out
	var ee *exec.ExitError
	if err := Run(context.Background(), cmd); !errors.As(err, &ee) || ee.ExitCode() != 3 {
		t.Fatalf("Run = %v, want exit status 3", err)
	}
	if out.String() != "hello\n" {
		t.Errorf("stdout = %q, want %q", out.String(), "hello\n")
	}

	ctx, cancel := context.WithCancel(context.Background())
	cmd = CommandGrace(ctx, time.Second, "sleep", "1000")
	done := make(chan error, 1)
	go func() { done <- Run(context.Background(), cmd) }()
	time.Sleep(100 * time.Millisecond)
	cancel()
	select {
	case err := <-done:
		if err == nil {
			t.Fatal("Run of a cancelled sleep returned no error")
		}
	case <-time.After(30 * time.Second): // a hang guard, not a speed claim
		t.Fatal("Run did not return after cancellation")
	}
}

// procState is the state letter of /proc/PID/stat (R, S, Z, ...), or
// "?" if it cannot be read.
func procState(pid int) string {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return "?"
	}
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	return f[0]
}

// TestAwaitExitSeesAProcessThatHadAlreadyExited: the process is a zombie
// before the wait begins, as a fast one often is. Its readiness can
// arrive while the wait is being set up; once forgotten there, it hung a
// run of 1,000 script components.
func TestAwaitExitSeesAProcessThatHadAlreadyExited(t *testing.T) {
	done := make(chan error, 1)
	go func() {
		for range 200 {
			cmd := exec.Command("true")
			if err := cmd.Start(); err != nil {
				done <- err
				return
			}
			for procState(cmd.Process.Pid) != "Z" {
				time.Sleep(100 * time.Microsecond)
			}
			awaitExit(cmd.Process.Pid, 0, nil)
			if err := cmd.Wait(); err != nil {
				done <- err
				return
			}
		}
		done <- nil
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(60 * time.Second): // a hang guard, not a speed claim
		t.Fatal("awaitExit never returned for a process that had exited")
	}
}
