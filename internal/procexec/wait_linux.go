package procexec

import (
	"errors"
	"os"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// awaitExit returns once process pid has exited, leaving it for Wait to
// reap, and calls every each time another interval passes before that;
// every returns the interval until its next call (0: the same again). It
// waits in the runtime's poller (a pidfd becomes readable when its process
// exits), so a running tool holds no thread blocked in waitid; such a
// thread's processor is taken back and handed round by the scheduler,
// which cost knit about a tenth of its CPU on a drift of 20 components.
// Without a pidfd it returns at once (Wait then blocks as usual);
// capture asks pidfdWorks first, as its output then only arrives at the
// end.
func awaitExit(pid int, interval time.Duration, every func() time.Duration) {
	fd, err := unix.PidfdOpen(pid, unix.PIDFD_NONBLOCK)
	if err != nil {
		return
	}
	f := os.NewFile(uintptr(fd), "pidfd")
	defer f.Close()
	rc, err := f.SyscallConn()
	if err != nil {
		return
	}
	for {
		ticking := interval > 0 && f.SetReadDeadline(time.Now().Add(interval)) == nil
		// The callback asks the pidfd itself: readiness that arrived
		// before Read began waiting is forgotten, and the process may have
		// exited by then; an exit after the callback's look wakes the wait.
		err := rc.Read(func(fd uintptr) bool {
			p := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
			n, err := unix.Poll(p, 0)
			return err != nil || (n > 0 && p[0].Revents != 0)
		})
		if !ticking || !errors.Is(err, os.ErrDeadlineExceeded) {
			return
		}
		if next := every(); next > 0 {
			interval = next
		}
	}
}

// pidfdWorks reports whether this kernel has nonblocking pidfds (5.10 on).
var pidfdWorks = sync.OnceValue(func() bool {
	fd, err := unix.PidfdOpen(os.Getpid(), unix.PIDFD_NONBLOCK)
	if err != nil {
		return false
	}
	unix.Close(fd)
	return true
})
