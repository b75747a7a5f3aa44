package schedule

import (
	"fmt"
	"strings"
	"time"
)

// Schedule tells when something runs next.
type Schedule interface {
	// Next returns the first activation strictly after after, in after's
	// location, or the zero Time if there is none (Parse rejects schedules
	// that never fire, so in practice there always is one). Cron fields are
	// read in after's location; pass UTC times to stay clear of daylight
	// saving (a wall-clock time skipped by a DST change does not fire that
	// day). Next is safe for concurrent use.
	Next(after time.Time) time.Time
}

// DefaultMinEvery is the shortest "@every" period Parse accepts unless told
// otherwise with MinEvery.
const DefaultMinEvery = time.Minute

// Option changes how Parse reads a schedule.
type Option func(*config)

type config struct {
	minEvery time.Duration
}

// MinEvery sets the shortest "@every" period Parse accepts (default one
// minute). Tests use it to allow sub-second periods; d must be positive.
func MinEvery(d time.Duration) Option {
	return func(c *config) { c.minEvery = d }
}

// Error reports why a schedule does not parse. Field names the cron field
// the problem is in ("minute", "hour", "day-of-month", "month",
// "day-of-week") and is empty for problems with the whole string. Offset is
// the byte offset in Input where the offending text starts, for callers
// that point at a column.
type Error struct {
	Input  string
	Field  string
	Offset int
	Msg    string
}

// Error renders the problem as "minute field: 61 is out of range 0-59", or
// just the message when no field is involved.
func (e *Error) Error() string {
	if e.Field == "" {
		return e.Msg
	}
	return e.Field + " field: " + e.Msg
}

// descriptors maps the @-shorthands to the cron expressions they stand for.
var descriptors = map[string]string{
	"@yearly":   "0 0 1 1 *",
	"@annually": "0 0 1 1 *",
	"@monthly":  "0 0 1 * *",
	"@weekly":   "0 0 * * 0",
	"@daily":    "0 0 * * *",
	"@midnight": "0 0 * * *",
	"@hourly":   "0 * * * *",
}

// Parse reads a schedule: "@every <duration>", one of the @-shorthands
// (@hourly, @daily, @weekly, @monthly, @yearly, @annually, @midnight) or a
// standard five-field cron expression (see the package doc). Surrounding
// white space is ignored. A problem is reported as an *Error naming the
// field and offset of the first offending part; a cron expression that can
// never fire (such as "0 0 30 2 *") is an error too.
func Parse(s string, opts ...Option) (Schedule, error) {
	cfg := config{minEvery: DefaultMinEvery}
	for _, o := range opts {
		o(&cfg)
	}
	trimmed := strings.TrimSpace(s)
	start := strings.Index(s, trimmed)
	switch {
	case trimmed == "":
		return nil, &Error{Input: s, Msg: "empty schedule"}
	case strings.HasPrefix(trimmed, "@every"):
		return parseEvery(s, start, cfg.minEvery)
	case strings.HasPrefix(trimmed, "@"):
		expr, ok := descriptors[strings.ToLower(trimmed)]
		if !ok {
			return nil, &Error{Input: s, Offset: start, Msg: fmt.Sprintf(
				"unknown schedule %q; want @every <duration>, @hourly, @daily, @weekly, @monthly, @yearly or a 5-field cron expression", trimmed)}
		}
		return parseCron(expr)
	}
	return parseCron(s)
}

// every fires a fixed period after the time it is asked about.
type every struct{ d time.Duration }

// Next returns after plus the period: callers pass the previous activation
// (or the time they start) and the period holds from there.
func (e every) Next(after time.Time) time.Time { return after.Add(e.d) }

func parseEvery(s string, start int, minEvery time.Duration) (Schedule, error) {
	rest := strings.TrimPrefix(s[start:], "@every")
	arg := strings.TrimSpace(rest)
	off := start + len("@every") + strings.Index(rest, arg)
	if arg == "" || rest == strings.TrimLeft(rest, " \t") {
		return nil, &Error{Input: s, Offset: start, Msg: `want "@every <duration>", such as "@every 30m"`}
	}
	d, err := time.ParseDuration(arg)
	if err != nil {
		return nil, &Error{Input: s, Offset: off, Msg: fmt.Sprintf("@every: %q is not a duration such as 30m or 1h30m", arg)}
	}
	if d < minEvery {
		return nil, &Error{Input: s, Offset: off, Msg: fmt.Sprintf("@every: %s is shorter than the minimum %s", arg, minEvery)}
	}
	return every{d: d}, nil
}
