package bench

import (
	"os"
	"syscall"
)

// maxRSS is ps's peak resident set size in bytes, which macOS reports as is.
func maxRSS(ps *os.ProcessState) int64 {
	if ru, ok := ps.SysUsage().(*syscall.Rusage); ok {
		return ru.Maxrss
	}
	return 0
}
