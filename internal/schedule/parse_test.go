package schedule

import (
	"errors"
	"testing"
	"time"
)

// utc parses "2006-01-02 15:04" in UTC.
func utc(t *testing.T, s string) time.Time {
	t.Helper()
	v, err := time.Parse("2006-01-02 15:04", s)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func TestNext(t *testing.T) {
	tests := []struct {
		expr, after string
		want        []string // successive activations
	}{
		{"*/15 * * * *", "2024-05-01 10:07", []string{"2024-05-01 10:15", "2024-05-01 10:30", "2024-05-01 10:45", "2024-05-01 11:00"}},
		{"*/15 * * * *", "2024-05-01 10:15", []string{"2024-05-01 10:30"}}, // strictly after
		{"0 * * * *", "2024-12-31 23:30", []string{"2025-01-01 00:00", "2025-01-01 01:00"}},
		{"@hourly", "2024-01-01 00:00", []string{"2024-01-01 01:00"}},
		{"@daily", "2024-02-28 12:00", []string{"2024-02-29 00:00", "2024-03-01 00:00"}},
		{"@weekly", "2024-05-01 00:00", []string{"2024-05-05 00:00", "2024-05-12 00:00"}}, // Sundays
		{"@monthly", "2024-01-31 00:00", []string{"2024-02-01 00:00", "2024-03-01 00:00"}},
		{"@yearly", "2024-06-01 00:00", []string{"2025-01-01 00:00"}},
		// Day 31 skips the months without one.
		{"0 0 31 * *", "2024-01-31 00:00", []string{"2024-03-31 00:00", "2024-05-31 00:00", "2024-07-31 00:00", "2024-08-31 00:00"}},
		// A leap day waits for a leap year.
		{"0 12 29 2 *", "2024-03-01 00:00", []string{"2028-02-29 12:00", "2032-02-29 12:00"}},
		// Ranges, lists and names.
		{"30 9-17/4 * * MON-FRI", "2024-05-03 14:00", []string{"2024-05-03 17:30", "2024-05-06 09:30", "2024-05-06 13:30"}},
		{"0 0 * jan,Jul sun", "2024-01-27 00:00", []string{"2024-01-28 00:00", "2024-07-07 00:00"}},
		{"5,10-12 3 * * *", "2024-05-01 03:10", []string{"2024-05-01 03:11", "2024-05-01 03:12", "2024-05-02 03:05"}},
		{"5/20 * * * *", "2024-05-01 03:00", []string{"2024-05-01 03:05", "2024-05-01 03:25", "2024-05-01 03:45", "2024-05-01 04:05"}},
		// 7 is Sunday as well as 0.
		{"0 0 * * 7", "2024-05-01 00:00", []string{"2024-05-05 00:00"}},
		{"0 0 * * 5-7", "2024-05-01 00:00", []string{"2024-05-03 00:00", "2024-05-04 00:00", "2024-05-05 00:00", "2024-05-10 00:00"}},
		// Both day fields restricted: either matches (the 13th or a Friday).
		{"0 0 13 * 5", "2024-09-01 00:00", []string{"2024-09-06 00:00", "2024-09-13 00:00", "2024-09-20 00:00", "2024-09-27 00:00", "2024-10-04 00:00", "2024-10-11 00:00", "2024-10-13 00:00"}},
		// One of them unrestricted (? included): both must match.
		{"0 0 13 * ?", "2024-09-01 00:00", []string{"2024-09-13 00:00", "2024-10-13 00:00"}},
		{"0 0 ? * 5", "2024-09-01 00:00", []string{"2024-09-06 00:00", "2024-09-13 00:00"}},
		// Seconds in after are dropped: the next whole minute is the earliest.
		{"* * * * *", "2024-05-01 10:07", []string{"2024-05-01 10:08", "2024-05-01 10:09"}},
	}
	for _, tt := range tests {
		t.Run(tt.expr+" after "+tt.after, func(t *testing.T) {
			s, err := Parse(tt.expr)
			if err != nil {
				t.Fatal(err)
			}
			at := utc(t, tt.after)
			for _, w := range tt.want {
				at = s.Next(at)
				if want := utc(t, w); !at.Equal(want) {
					t.Fatalf("Next = %s, want %s", at.Format(time.DateTime), want.Format(time.DateTime))
				}
			}
		})
	}
}

func TestNextKeepsLocationAndDropsSeconds(t *testing.T) {
	s, err := Parse("0 * * * *")
	if err != nil {
		t.Fatal(err)
	}
	loc := time.FixedZone("UTC+2", 2*60*60)
	got := s.Next(time.Date(2024, 5, 1, 10, 59, 59, 999, loc))
	if want := time.Date(2024, 5, 1, 11, 0, 0, 0, loc); !got.Equal(want) || got.Location() != loc {
		t.Fatalf("Next = %s, want %s", got, want)
	}
}

func TestEvery(t *testing.T) {
	s, err := Parse("@every 30m")
	if err != nil {
		t.Fatal(err)
	}
	at := utc(t, "2024-05-01 10:07")
	if got, want := s.Next(at), utc(t, "2024-05-01 10:37"); !got.Equal(want) {
		t.Fatalf("Next = %s, want %s", got, want)
	}
	if _, err := Parse("@every 10ms", MinEvery(time.Millisecond)); err != nil {
		t.Fatalf("MinEvery did not allow a short period: %v", err)
	}
}

func TestParseAcceptsCloudKnitSchedules(t *testing.T) {
	// cronSchedule strings as CloudKnit environments use them: standard
	// five-field cron, white space around them included.
	for _, s := range []string{"0 * * * *", "*/5 * * * *", "0 0 * * *", "0 */6 * * 1-5", " 30 2 1,15 * * ", "0\t9\t*\t*\tMON"} {
		if _, err := Parse(s); err != nil {
			t.Errorf("Parse(%q): %v", s, err)
		}
	}
}

func TestParseErrors(t *testing.T) {
	tests := []struct {
		in, field string
		offset    int
		msg       string
	}{
		{"", "", 0, "empty schedule"},
		{"61 * * * *", "minute", 0, "minute field: 61 is out of range 0-59"},
		{"0 24 * * *", "hour", 2, "hour field: 24 is out of range 0-23"},
		{"0 0 0 * *", "day-of-month", 4, "day-of-month field: 0 is out of range 1-31"},
		{"0 0 * 13 *", "month", 6, "month field: 13 is out of range 1-12"},
		{"0 0 * * 8", "day-of-week", 8, "day-of-week field: 8 is out of range 0-7"},
		{"0 0 * * 1,2,9", "day-of-week", 12, "day-of-week field: 9 is out of range 0-7"},
		{"0 0 * FOO *", "month", 6, `month field: "FOO" is neither a number in 1-12 nor a name JAN-DEC`},
		{"0 0 * * MON-FUN", "day-of-week", 8, `day-of-week field: "FUN" is neither a number in 0-7 nor a name SUN-SAT`},
		{"x * * * *", "minute", 0, `minute field: "x" is not a number in 0-59`},
		{"*/0 * * * *", "minute", 0, `minute field: step "0" must be a whole number of at least 1`},
		{"30-10 * * * *", "minute", 0, "minute field: range 30-10 starts after it ends"},
		{"1,,2 * * * *", "minute", 2, "minute field: empty list item"},
		{"? * * * *", "minute", 0, "minute field: ? is only allowed in day-of-month and day-of-week"},
		{"* * * *", "", 0, "want 5 fields (minute hour day-of-month month day-of-week), got 4"},
		{"0 * * * * *", "", 0, "want 5 fields (minute hour day-of-month month day-of-week), got 6"},
		{"0 0 30 2 *", "day-of-month", 4, "day-of-month field: day 30 never occurs in the selected months, so the schedule never fires"},
		{"@fortnightly", "", 0, `unknown schedule "@fortnightly"; want @every <duration>, @hourly, @daily, @weekly, @monthly, @yearly or a 5-field cron expression`},
		{"@every", "", 0, `want "@every <duration>", such as "@every 30m"`},
		{"@every soon", "", 7, `@every: "soon" is not a duration such as 30m or 1h30m`},
		{"@every 30s", "", 7, "@every: 30s is shorter than the minimum 1m0s"},
		{"  @every 10s", "", 9, "@every: 10s is shorter than the minimum 1m0s"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			s, err := Parse(tt.in)
			if err == nil {
				t.Fatalf("Parse(%q) = %v, want an error", tt.in, s)
			}
			if err.Error() != tt.msg {
				t.Errorf("error = %q\nwant    %q", err, tt.msg)
			}
			var pe *Error
			if !errors.As(err, &pe) {
				t.Fatalf("error %T is not a *schedule.Error", err)
			}
			if pe.Field != tt.field || pe.Offset != tt.offset || pe.Input != tt.in {
				t.Errorf("Error{Field: %q, Offset: %d, Input: %q}, want {%q, %d, %q}", pe.Field, pe.Offset, pe.Input, tt.field, tt.offset, tt.in)
			}
		})
	}
}
