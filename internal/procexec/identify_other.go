//go:build unix && !linux

package procexec

// Identify returns what tells process pid apart from any later process
// given the same PID: on Linux its start time in clock ticks since boot
// (/proc/PID/stat) with the boot's ID, elsewhere the start time ps reports.
func Identify(pid int) (string, error) { return identifyPS(pid) }

// groupLive reports whether process group pgid has a member left.
func groupLive(pgid int) bool { return signalable(-pgid) }
