//go:build !linux

package procexec

// awaitExit has nothing better than Wait's own blocking wait here.
func awaitExit(int) {}
