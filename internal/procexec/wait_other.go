//go:build !linux

package procexec

import "time"

// awaitExit has nothing better than Wait's own blocking wait here.
func awaitExit(int, time.Duration, func() time.Duration) {}
