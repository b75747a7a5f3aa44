//go:build !unix

package procexec

import (
	"errors"
	"io"
	"syscall"
	"time"
)

// Monotonic is time since an arbitrary start; there is no watchdog here.
func Monotonic() time.Duration { return time.Since(start) }

var start = time.Now()

// watchdogWorks says whether StartWatchdog starts one here.
const watchdogWorks = false

func watchdogAttr() *syscall.SysProcAttr { return nil }

// ServeWatchdog is not available where process groups are not.
func ServeWatchdog(io.Reader) error {
	return errors.New("the tool watchdog needs process groups (unix)")
}
