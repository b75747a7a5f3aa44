package bench

import (
	"os"
	"syscall"
)

// maxRSS is ps's peak resident set size in bytes; Linux reports it in KiB.
func maxRSS(ps *os.ProcessState) int64 {
	if ru, ok := ps.SysUsage().(*syscall.Rusage); ok {
		return ru.Maxrss * 1024
	}
	return 0
}
