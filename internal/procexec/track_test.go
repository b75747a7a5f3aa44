//go:build unix

package procexec_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"knit.dev/knit/internal/procexec"
)

// recorder is a Tracker that remembers what it was told; at Ended it also
// notes whether the group still existed.
type recorder struct {
	mu         sync.Mutex
	started    []procexec.Group
	ended      []procexec.Group
	liveAtEnd  bool // watch was running when Ended was called
	watch      int
	startedErr error
}

func (r *recorder) Started(g procexec.Group) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.started = append(r.started, g)
	return r.startedErr
}

func (r *recorder) Ended(g procexec.Group) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.ended = append(r.ended, g)
	r.liveAtEnd = r.liveAtEnd || r.watch > 0 && running(r.watch)
	return nil
}

// running reports whether pid exists and is not a zombie (a killed process
// init has not reaped yet).
func running(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return procexec.Alive(pid) && !procMounted()
	}
	i := bytes.LastIndexByte(b, ')')
	return i < 0 || i+2 >= len(b) || b[i+2] != 'Z'
}

func procMounted() bool {
	_, err := os.Stat("/proc/self/stat")
	return err == nil
}

// waitGroupGone waits until process group pgid has no process left, zombies
// included (hang guard only).
func waitGroupGone(t *testing.T, pgid int) {
	t.Helper()
	deadline := time.Now().Add(hangGuard)
	for groupExists(pgid) {
		if time.Now().After(deadline) {
			t.Fatalf("process group %d still exists", pgid)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestRunReportsTheGroupToTheTracker(t *testing.T) {
	rec := &recorder{}
	ctx := procexec.WithTracker(context.Background(), rec)
	dir := t.TempDir()
	cmd := procexec.Command(ctx, "sh", "-c", "echo $$ > pid")
	cmd.Dir = dir
	if err := procexec.Run(ctx, cmd); err != nil {
		t.Fatal(err)
	}
	pid := waitForPID(t, filepath.Join(dir, "pid"))
	if len(rec.started) != 1 || rec.started[0].ID != pid || rec.started[0].Start == "" {
		t.Fatalf("Started with %+v, want the group of pid %d with its identity", rec.started, pid)
	}
	if len(rec.ended) != 1 || rec.ended[0] != rec.started[0] {
		t.Fatalf("Ended with %+v, want %+v", rec.ended, rec.started)
	}
	// Without a tracker nothing is reported, and Run works as before.
	if err := procexec.Run(context.Background(), procexec.Command(context.Background(), "true")); err != nil {
		t.Fatal(err)
	}
}

func TestRunKillsACommandItCannotRecord(t *testing.T) {
	rec := &recorder{startedErr: errors.New("store is down")}
	ctx := procexec.WithTracker(context.Background(), rec)
	dir := t.TempDir()
	cmd := procexec.Command(ctx, "sh", "-c", "sleep 1000; touch ran")
	cmd.Dir = dir
	err := procexec.Run(ctx, cmd)
	if err == nil || !errors.Is(err, rec.startedErr) {
		t.Fatalf("Run = %v, want the tracker's error", err)
	}
	waitGroupGone(t, rec.started[0].ID)
	if len(rec.ended) != 0 {
		t.Errorf("Ended called for a group never recorded: %+v", rec.ended)
	}
}

// TestCancelledRunForgetsTheGroupOnlyOnceItIsGone: the shell exits on
// SIGINT at once, a grandchild ignoring it lives until the kill a grace
// later; the tracker hears of the end only then.
func TestCancelledRunForgetsTheGroupOnlyOnceItIsGone(t *testing.T) {
	rec := &recorder{}
	dir := t.TempDir()
	ctx, cancel := context.WithCancel(procexec.WithTracker(context.Background(), rec))
	defer cancel()
	cmd := procexec.CommandGrace(ctx, 500*time.Millisecond, "sh", "-c",
		`(trap '' INT; exec sleep 1000) >/dev/null 2>&1 </dev/null & echo $! > pid.tmp && mv pid.tmp pid; wait`)
	cmd.Dir = dir
	done := make(chan error, 1)
	go func() { done <- procexec.Run(ctx, cmd) }()
	grandchild := waitForPID(t, filepath.Join(dir, "pid"))
	t.Cleanup(func() { _ = syscall.Kill(grandchild, syscall.SIGKILL) })
	rec.mu.Lock()
	rec.watch = grandchild
	rec.mu.Unlock()
	cancel()
	select {
	case err := <-done:
		if err == nil {
			t.Error("Run after cancellation returned nil")
		}
	case <-time.After(hangGuard):
		t.Fatal("Run did not return after cancellation")
	}
	if len(rec.ended) != 1 || rec.liveAtEnd {
		t.Fatalf("Ended %d times, grandchild running at the time: %v", len(rec.ended), rec.liveAtEnd)
	}
}

// startLeft starts, in a group of its own, what a dead knit would have left:
// a shell ignoring SIGINT (the parent-death signal) and a grandchild that
// also ignores SIGTERM. The test reaps the shell; the grandchild is init's.
func startLeft(t *testing.T) (procexec.Group, int) {
	t.Helper()
	dir := t.TempDir()
	cmd := exec.Command("sh", "-c", `trap '' INT; (trap '' INT TERM; exec sleep 1000) >/dev/null 2>&1 </dev/null &
		echo $! > pid.tmp && mv pid.tmp pid; while :; do sleep 1; done`)
	cmd.Dir = dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pgid := cmd.Process.Pid
	go cmd.Wait()
	t.Cleanup(func() { _ = syscall.Kill(-pgid, syscall.SIGKILL) })
	grandchild := waitForPID(t, filepath.Join(dir, "pid"))
	start, err := procexec.Identify(pgid)
	if err != nil || start == "" {
		t.Fatalf("Identify(%d) = %q, %v", pgid, start, err)
	}
	return procexec.Group{ID: pgid, Start: start}, grandchild
}

func TestEndGroupEndsWhatADeadKnitLeft(t *testing.T) {
	g, grandchild := startLeft(t)
	// The grace is short so the test is quick; any grace gives the same
	// outcome: the shell ends on SIGTERM, the grandchild on SIGKILL.
	if err := procexec.EndGroup(context.Background(), g, 200*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	if running(grandchild) {
		t.Errorf("grandchild %d is running", grandchild)
	}
	waitGroupGone(t, g.ID)
	// Ending it again finds nothing to do.
	if err := procexec.EndGroup(context.Background(), g, time.Second); err != nil {
		t.Fatalf("second EndGroup: %v", err)
	}
}

func TestEndGroupLeavesAProcessThatGotThePID(t *testing.T) {
	g, _ := startLeft(t)
	stranger := g
	stranger.Start = "linux:another-boot:1" // the tool's group as recorded; the PID is someone else's now
	if err := procexec.EndGroup(context.Background(), stranger, time.Second); err != nil {
		t.Fatal(err)
	}
	unknown := g
	unknown.Start = ""
	if err := procexec.EndGroup(context.Background(), unknown, time.Second); !errors.Is(err, procexec.ErrUnknownLeader) {
		t.Fatalf("EndGroup without an identity = %v, want ErrUnknownLeader", err)
	}
	if !procexec.Alive(g.ID) {
		t.Fatal("a process whose identity did not match was ended")
	}
}

func TestIdentifyTellsProcessesApart(t *testing.T) {
	a, err := procexec.Identify(os.Getpid())
	if err != nil || a == "" {
		t.Fatalf("Identify(self) = %q, %v", a, err)
	}
	if b, _ := procexec.Identify(os.Getpid()); b != a {
		t.Errorf("Identify(self) changed: %q, then %q", a, b)
	}
	g, _ := startLeft(t)
	if g.Start == a {
		t.Errorf("two processes share the identity %q", a)
	}
	if _, err := procexec.Identify(1 << 30); err == nil {
		t.Error("Identify of a PID no process has succeeded")
	}
}
