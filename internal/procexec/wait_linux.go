package procexec

import (
	"os"

	"golang.org/x/sys/unix"
)

// awaitExit returns once process pid has exited, leaving it for Wait to
// reap. It waits in the runtime's poller (a pidfd becomes readable when its
// process exits), so a running tool holds no thread blocked in waitid;
// such a thread's processor is taken back and handed round by the
// scheduler, which cost knit about a tenth of its CPU on a drift of 20
// components. Any failure (a kernel without pidfd_open's nonblocking flag,
// before 5.10) returns at once: Wait then blocks as usual.
func awaitExit(pid int) {
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
	// The callback asks the pidfd itself: readiness that arrived before
	// Read began waiting is forgotten, and the process may have exited by
	// then; an exit after the callback's look wakes the wait.
	_ = rc.Read(func(fd uintptr) bool {
		p := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
		n, err := unix.Poll(p, 0)
		return err != nil || (n > 0 && p[0].Revents != 0)
	})
}
