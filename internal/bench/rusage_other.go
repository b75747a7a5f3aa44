//go:build !linux && !darwin

package bench

import "os"

// maxRSS is unknown here (units differ by OS, or there is no rusage): 0.
func maxRSS(*os.ProcessState) int64 { return 0 }
