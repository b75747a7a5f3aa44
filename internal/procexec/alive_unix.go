//go:build unix

package procexec

// Alive reports whether a process with pid exists on this host (it may be
// one the caller cannot signal). pid <= 0 is never alive.
func Alive(pid int) bool {
	return pid > 0 && signalable(pid)
}
