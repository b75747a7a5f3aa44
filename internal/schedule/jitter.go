package schedule

import (
	"crypto/sha256"
	"encoding/binary"
	"math/bits"
	"time"
)

// Jitter returns a delay in [0, max) that depends only on key, so that many
// environments sharing a schedule (keyed by their IDs) start spread over the
// window instead of in the same second, and each one keeps the same offset
// across restarts. It returns 0 when max is not positive.
func Jitter(key string, max time.Duration) time.Duration {
	if max <= 0 {
		return 0
	}
	sum := sha256.Sum256([]byte(key))
	h := binary.BigEndian.Uint64(sum[:8])
	// The high word of h*max is uniform in [0, max) without modulo bias.
	hi, _ := bits.Mul64(h, uint64(max))
	return time.Duration(hi)
}
