package procexec

import (
	"fmt"
	"io"
	"os/exec"
	"sync"
	"time"
)

// Watchdog ends the tools of a run whose lease is no longer known to be
// renewed, from a process of its own: a knit process that is paused
// (SIGSTOP, a long GC pause) or killed cannot stop its tools itself, and
// they must not act past its lease, when another replica may take the
// environment over. Each lease is a deadline on the system's monotonic
// clock (Monotonic), which runs on while knit is stopped: a deadline knit
// sends late, after a pause, is already past. Once a run's deadline has
// passed, the watchdog sends each of its tool process groups SIGINT, then
// SIGKILL grace later.
//
// The watchdog process reads ServeWatchdog's protocol on its stdin; once
// knit is gone (stdin closed) it keeps every deadline it was given, then
// exits. Methods are safe for concurrent use; a nil *Watchdog does
// nothing.
type Watchdog struct {
	mu  sync.Mutex
	w   io.WriteCloser
	cmd *exec.Cmd
}

// StartWatchdog starts the watchdog process: name with args must run
// ServeWatchdog on its stdin (knit runs itself with a hidden command). It
// runs in a process group of its own, so a terminal's Ctrl-C leaves it
// to enforce what knit told it.
// Where there are no process groups (Windows) there is no watchdog: it
// returns nil.
func StartWatchdog(name string, args ...string) (*Watchdog, error) {
	if !watchdogWorks {
		return nil, nil
	}
	cmd := exec.Command(name, args...)
	cmd.SysProcAttr = watchdogAttr()
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start the tool watchdog: %w", err)
	}
	go cmd.Wait() //nolint:errcheck // reaped; its end shows as a failed write
	return &Watchdog{w: in, cmd: cmd}, nil
}

// Lease tells the watchdog that run's tools may act until deadline (on
// the Monotonic clock); those still running then get SIGINT, and SIGKILL
// grace later.
func (w *Watchdog) Lease(run string, deadline, grace time.Duration) error {
	return w.send("lease %s %d %d\n", run, int64(deadline), int64(grace))
}

// Group tells the watchdog that process group pgid is a tool of run.
func (w *Watchdog) Group(run string, pgid int) error {
	return w.send("group %s %d\n", run, pgid)
}

// Ended tells the watchdog that process group pgid is gone.
func (w *Watchdog) Ended(pgid int) error { return w.send("ended %d\n", pgid) }

// Release tells the watchdog that run is over: it forgets the run.
func (w *Watchdog) Release(run string) error { return w.send("release %s\n", run) }

// Close ends the protocol; the watchdog keeps the deadlines it has.
func (w *Watchdog) Close() error {
	if w == nil {
		return nil
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.w.Close()
}

func (w *Watchdog) send(format string, args ...any) error {
	if w == nil {
		return nil
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if _, err := fmt.Fprintf(w.w, format, args...); err != nil {
		return fmt.Errorf("tell the tool watchdog: %w", err)
	}
	return nil
}
