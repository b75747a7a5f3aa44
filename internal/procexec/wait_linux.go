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
	polled := false
	_ = rc.Read(func(uintptr) bool {
		// The first call asks the poller to wait; the second comes once the
		// pidfd is readable. A spurious wake-up only makes Wait block.
		done := polled
		polled = true
		return done
	})
}
