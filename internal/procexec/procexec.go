// Package procexec is the one place knit's own runners start processes:
// a process group per command, SIGINT on cancellation and SIGKILL to the
// whole group only after a grace period, and death of the child when knit
// itself dies (Linux).
package procexec

import (
	"context"
	"io"
	"os/exec"
	"sync"
	"time"
)

// Grace is how long a cancelled command has to exit after SIGINT before its
// process group is killed, unless CommandGrace says otherwise.
const Grace = 10 * time.Second

// Command is CommandGrace with the default Grace.
func Command(ctx context.Context, name string, args ...string) *exec.Cmd {
	return CommandGrace(ctx, Grace, name, args...)
}

// CommandGrace returns an exec.Cmd for name/args that runs in a process
// group of its own. When ctx is cancelled the whole group gets SIGINT; every
// process still in the group grace later (the command, and whatever it left
// running, even if it ignores SIGINT) gets SIGKILL. Callers use the Cmd as
// usual but must not replace its SysProcAttr, Cancel or WaitDelay.
//
// Wait may return before grace has passed (the command exited on SIGINT);
// the kill of any remaining group members still happens on time. A process
// that left the group (setsid) and kept the command's pipes open does not
// hold up Wait for longer than grace plus a moment: the pipes are closed.
// A grace of zero or less kills at once. Where process groups do not exist
// (Windows), cancellation kills the command itself.
func CommandGrace(ctx context.Context, grace time.Duration, name string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.SysProcAttr = sysProcAttr()
	cmd.Cancel = func() error {
		err := interruptGroup(cmd.Process)
		go killGroupAfter(cmd.Process, grace)
		return err
	}
	// Backstop for pipes held by processes outside the group; the group
	// itself is killed by killGroupAfter, which runs first.
	cmd.WaitDelay = grace + waitMargin
	return cmd
}

// waitMargin lets killGroupAfter's SIGKILL land before exec's own
// WaitDelay kill of the direct child.
const waitMargin = 500 * time.Millisecond

// LockedWriter serialises writes to W: a tool's stdout and stderr are
// copied by two goroutines, and the log they share need not be safe for that.
// It is for logs, which people read: where a tool prints faster than W
// takes it, Run may skip part of it (saying so), which it never does to
// other writers (output parsed as data).
type LockedWriter struct {
	mu sync.Mutex
	W  io.Writer
}

// thinnable marks a log writer Run may skip output of.
func (*LockedWriter) thinnable() {}

func (l *LockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.W.Write(p)
}

// Run is cmd.Run for knit's runners, made cheap for knit while the tools
// run. On Linux it waits in the runtime's poller (awaitExit), so the tools
// a run has going hold no threads, and the command reads in-memory input
// and writes output meant for writers to memory files (captured), so knit
// is not woken for each line it prints: the writers get what is new every
// liveInterval and the rest once it has exited, Stdout's before Stderr's.
// Otherwise it is cmd.Run.
//
// ctx is the one cmd was made with: a Tracker it carries (WithTracker)
// learns of the command's process group, so that a knit killed outright
// leaves a record of what it left running.
func Run(ctx context.Context, cmd *exec.Cmd) error {
	c, err := capture(cmd)
	if err != nil {
		return err
	}
	defer c.close()
	if err := cmd.Start(); err != nil {
		return err
	}
	ended, err := track(ctx, cmd.Process.Pid, cmd.WaitDelay)
	if err != nil {
		_ = cmd.Wait()
		return err
	}
	awaitExit(cmd.Process.Pid, liveInterval, func() time.Duration {
		// A tool printing fast is read more often, so that its output
		// waits in memory for no longer than busyInterval.
		if c.deliver() >= busyBytes {
			return busyInterval
		}
		return liveInterval
	})
	err = cmd.Wait()
	c.deliver()
	if err == nil {
		err = c.err
	}
	if ended != nil {
		err = ended(err)
	}
	return err
}

// liveInterval is how often a running command's output is handed on: live
// logs lag by at most this, and a command that ends sooner costs no wakeup.
// Once an interval brought busyBytes or more, the next comes after
// busyInterval.
const (
	liveInterval = 500 * time.Millisecond
	busyInterval = 50 * time.Millisecond
	busyBytes    = 1 << 20
)
