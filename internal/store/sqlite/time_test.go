package sqlite

import (
	"testing"
	"time"
)

// TestParseTime: stored times read back as time.Parse reads them, and
// what it refuses is refused.
func TestParseTime(t *testing.T) {
	for _, s := range []string{
		ts(time.Date(2026, 11, 23, 10, 33, 9, 123456789, time.UTC)).(string),
		ts(time.Date(1999, 12, 31, 23, 59, 59, 0, time.UTC)).(string),
		ts(time.Date(2024, 2, 29, 0, 0, 0, 1, time.UTC)).(string),
		"2026-02-30T00:00:00.000000000Z", "2026-13-01T00:00:00.000000000Z", "2026-01-01T24:00:00.000000000Z",
		"2026-01-01T00:00:00.00000000xZ", "2026-01-01 00:00:00.000000000Z", "2026-01-01T00:00:00Z", "",
	} {
		want, wantErr := time.Parse(timeLayout, s)
		got, err := parseTime(s)
		if (err != nil) != (wantErr != nil) || !got.Equal(want) || got.Location() != want.Location() {
			t.Errorf("parseTime(%q) = %v, %v; time.Parse: %v, %v", s, got, err, want, wantErr)
		}
	}
}
