package bench

import (
	"os"
	"syscall"
	"time"
)

// maxRSS is ps's peak resident set size in bytes, which macOS reports as is.
func maxRSS(ps *os.ProcessState) int64 {
	if ru, ok := ps.SysUsage().(*syscall.Rusage); ok {
		return ru.Maxrss
	}
	return 0
}

// childrenCPU is the user and system time of this process's waited-for
// children so far (and of theirs).
func childrenCPU() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_CHILDREN, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
