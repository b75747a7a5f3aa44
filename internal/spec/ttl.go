package spec

import (
	"fmt"
	"time"
)

// The bounds of spec.ttl: a second (tests) to a year (anything longer is
// not ephemeral).
const (
	MinTTL = time.Second
	MaxTTL = 365 * 24 * time.Hour
)

// ParseTTL parses a ttl ("72h", "90m") and checks its bounds.
func ParseTTL(s string) (time.Duration, error) {
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("ttl %q is not a duration", s)
	}
	if d < MinTTL || d > MaxTTL {
		return 0, fmt.Errorf("ttl %s is out of bounds (%s to %s)", s, MinTTL, MaxTTL)
	}
	return d, nil
}

// TTLDuration is the environment's ttl, 0 when it has none (or an
// invalid one, which validation reports).
func (s *EnvSpec) TTLDuration() time.Duration {
	if s.TTL == "" {
		return 0
	}
	d, err := ParseTTL(s.TTL)
	if err != nil {
		return 0
	}
	return d
}
