//go:build unix

package procexec_test

import (
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"

	"knit.dev/knit/internal/procexec"
)

// TestMain lets the test binary be the watchdog process.
func TestMain(m *testing.M) {
	if os.Getenv("KNIT_TEST_WATCHDOG") == "1" {
		if err := procexec.ServeWatchdog(os.Stdin); err != nil {
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func startWatchdog(t *testing.T) *procexec.Watchdog {
	t.Helper()
	t.Setenv("KNIT_TEST_WATCHDOG", "1")
	wd, err := procexec.StartWatchdog(os.Args[0])
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { wd.Close() })
	return wd
}

// tool starts a process group that ignores SIGINT (as a tool busy in a
// provisioner may), so only SIGKILL ends it.
func tool(t *testing.T, ignoreInt bool) *exec.Cmd {
	t.Helper()
	script := "sleep 60"
	if ignoreInt {
		script = "trap '' INT; sleep 60 & wait; sleep 60"
	}
	cmd := exec.Command("/bin/sh", "-c", script)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL); cmd.Wait() })
	return cmd
}

func exited(cmd *exec.Cmd) <-chan error {
	ch := make(chan error, 1)
	go func() { ch <- cmd.Wait() }()
	return ch
}

// TestTheWatchdogEndsToolsOnceTheLeaseIsOver: a run's tools run while its
// lease lasts; once the deadline passes (knit sent no newer one: it is
// stopped, or dead), the watchdog interrupts their process group, and
// kills it grace later when it ignores SIGINT; a tool of a run whose lease
// is renewed is left alone, and so is one that ended. A deadline that
// comes late, already past, ends the tools at once.
func TestTheWatchdogEndsToolsOnceTheLeaseIsOver(t *testing.T) {
	wd := startWatchdog(t)
	now := procexec.Monotonic()
	stubborn, polite, renewed := tool(t, true), tool(t, false), tool(t, false)
	must(t, wd.Lease("run-a", now+300*time.Millisecond, 500*time.Millisecond))
	must(t, wd.Lease("run-b", now+time.Hour, time.Second))
	must(t, wd.Group("run-a", stubborn.Process.Pid))
	must(t, wd.Group("run-a", polite.Process.Pid))
	must(t, wd.Group("run-b", renewed.Process.Pid))
	politeDone, stubbornDone := exited(polite), exited(stubborn)
	select {
	case <-politeDone:
	case <-time.After(time.Minute):
		t.Fatal("a tool of a run whose lease ended was not interrupted")
	}
	select {
	case <-stubbornDone:
		if d := procexec.Monotonic() - now; d < 700*time.Millisecond {
			t.Errorf("the tool that ignores SIGINT ended %v after the lease, before its grace", d)
		}
	case <-time.After(time.Minute):
		t.Fatal("a tool that ignores SIGINT was not killed after the grace")
	}
	if err := syscall.Kill(renewed.Process.Pid, 0); err != nil {
		t.Errorf("the tool of the renewed run is gone: %v", err)
	}

	// Paused past its lease, knit sends its last deadline late.
	late := tool(t, false)
	lateDone := exited(late)
	must(t, wd.Group("run-b", late.Process.Pid))
	must(t, wd.Lease("run-b", procexec.Monotonic()-time.Second, time.Second))
	select {
	case <-lateDone:
	case <-time.After(time.Minute):
		t.Fatal("a deadline already past did not end the tools")
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
