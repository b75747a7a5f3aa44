//go:build !linux && !darwin

package bench

import (
	"os"
	"time"
)

// maxRSS is unknown here (units differ by OS, or there is no rusage): 0.
func maxRSS(*os.ProcessState) int64 { return 0 }

// childrenCPU is unknown here: 0.
func childrenCPU() time.Duration { return 0 }
