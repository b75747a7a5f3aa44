//go:build unix

package procexec

import (
	"errors"
	"os"
	"syscall"
	"time"
)

// interruptGroup sends SIGINT to the process group p leads. A group that
// is already gone reports os.ErrProcessDone, which exec.Cmd does not treat
// as a failure to cancel.
func interruptGroup(p *os.Process) error {
	err := syscall.Kill(-p.Pid, syscall.SIGINT)
	if errors.Is(err, syscall.ESRCH) {
		return os.ErrProcessDone
	}
	return err
}

// killGroupAfter sends SIGKILL to the process group p leads once grace has
// passed, unless every member has exited by then. Stopping early also keeps
// a recycled pgid, long after the group is gone, from being signalled.
func killGroupAfter(p *os.Process, grace time.Duration) {
	pgid := p.Pid
	deadline := time.NewTimer(grace)
	defer deadline.Stop()
	tick := time.NewTicker(groupPoll)
	defer tick.Stop()
	for {
		select {
		case <-deadline.C:
			_ = syscall.Kill(-pgid, syscall.SIGKILL)
			return
		case <-tick.C:
			if !signalable(-pgid) {
				return
			}
		}
	}
}

// signalable reports whether kill(pid, 0) finds a process (pid > 0) or a
// process group (pid < 0). EPERM means it exists but belongs to another user.
func signalable(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}
