package schedule

import (
	"fmt"
	"testing"
	"time"
)

func TestJitterSpreadsKeysOverTheWindow(t *testing.T) {
	const window = 5 * time.Minute
	seconds := map[time.Duration]bool{}
	for i := range 100 {
		key := fmt.Sprintf("env-%d", i)
		j := Jitter(key, window)
		if j < 0 || j >= window {
			t.Fatalf("Jitter(%q) = %s, outside [0, %s)", key, j, window)
		}
		if again := Jitter(key, window); again != j {
			t.Fatalf("Jitter(%q) = %s then %s; want the same every time", key, j, again)
		}
		seconds[j.Truncate(time.Second)] = true
	}
	if len(seconds) < 60 {
		t.Fatalf("100 keys start in %d distinct seconds of %s, want at least 60", len(seconds), window)
	}
}

func TestJitterWithoutWindowIsZero(t *testing.T) {
	for _, max := range []time.Duration{0, -time.Second} {
		if j := Jitter("env-1", max); j != 0 {
			t.Errorf("Jitter(_, %s) = %s, want 0", max, j)
		}
	}
	if j := Jitter("env-1", 1); j != 0 {
		t.Errorf("Jitter(_, 1ns) = %s, want 0", j)
	}
}
