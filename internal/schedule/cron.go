package schedule

import (
	"fmt"
	"math/bits"
	"strconv"
	"strings"
	"time"

	"github.com/robfig/cron/v3"
)

// The five-field expressions are parsed and scheduled by robfig/cron.
// What this file adds is what knit promises beyond it: every problem named
// with its field and byte offset (check), weekday 7 as Sunday, ? only in
// the day fields, and no expression that never fires.

// parser reads standard five-field cron; knit handles @every itself.
var parser = cron.NewParser(cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow)

// starBit is the bit robfig/cron sets on a field written * or ?, which
// switches day matching from "either" to "both".
const starBit = 1 << 63

// field describes one of the five cron fields.
type field struct {
	name     string
	min, max int
	names    []string // names[i] stands for min+i; nil if the field has none
}

var fields = [5]field{
	{name: "minute", min: 0, max: 59},
	{name: "hour", min: 0, max: 23},
	{name: "day-of-month", min: 1, max: 31},
	{name: "month", min: 1, max: 12, names: []string{"JAN", "FEB", "MAR", "APR", "MAY", "JUN", "JUL", "AUG", "SEP", "OCT", "NOV", "DEC"}},
	// 7 is Sunday too; sundayAsZero folds it onto 0 for robfig/cron.
	{name: "day-of-week", min: 0, max: 7, names: []string{"SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT"}},
}

// token is a piece of the input with its byte offset.
type token struct {
	text string
	off  int
}

// splitFields splits s on spaces and tabs, keeping offsets.
func splitFields(s string) []token {
	var out []token
	start := -1
	for i := 0; i <= len(s); i++ {
		blank := i == len(s) || s[i] == ' ' || s[i] == '\t'
		switch {
		case !blank && start < 0:
			start = i
		case blank && start >= 0:
			out = append(out, token{s[start:i], start})
			start = -1
		}
	}
	return out
}

// parseCron checks s, then lets robfig/cron parse it.
func parseCron(s string) (Schedule, error) {
	toks := splitFields(s)
	if len(toks) != 5 {
		return nil, &Error{Input: s, Msg: fmt.Sprintf(
			"want 5 fields (minute hour day-of-month month day-of-week), got %d", len(toks))}
	}
	text := make([]string, 5)
	for i, tok := range toks {
		t, err := fields[i].check(s, tok)
		if err != nil {
			return nil, err
		}
		text[i] = t
	}
	parsed, err := parser.Parse(strings.Join(text, " "))
	if err != nil { // check accepts nothing robfig/cron refuses; kept for safety
		return nil, &Error{Input: s, Msg: err.Error()}
	}
	spec, ok := parsed.(*cron.SpecSchedule)
	if !ok {
		return nil, &Error{Input: s, Msg: fmt.Sprintf("unexpected schedule type %T", parsed)}
	}
	if err := checkReachable(spec, s, toks[2].off); err != nil {
		return nil, err
	}
	return spec, nil
}

// checkReachable rejects day-of-month sets that no selected month has, such
// as "30 2": without a weekday to fall back on, they would never fire.
func checkReachable(c *cron.SpecSchedule, s string, off int) error {
	if c.Dow&starBit == 0 {
		return nil
	}
	firstDay := bits.TrailingZeros64(c.Dom &^ starBit)
	for m := 1; m <= 12; m++ {
		if c.Month&(1<<m) != 0 && firstDay <= daysIn(time.Month(m), 2000) {
			return nil
		}
	}
	return &Error{Input: s, Field: "day-of-month", Offset: off, Msg: fmt.Sprintf(
		"day %d never occurs in the selected months, so the schedule never fires", firstDay)}
}

// check reports the first bad part of one field, and returns the field's
// text as robfig/cron is to read it.
func (f field) check(input string, tok token) (string, error) {
	off := tok.off
	parts := strings.Split(tok.text, ",")
	for i, part := range parts {
		lo, hi, step, err := f.checkPart(part)
		if err != nil {
			return "", &Error{Input: input, Field: f.name, Offset: off, Msg: err.Error()}
		}
		if f.name == "day-of-week" && !strings.HasPrefix(part, "*") && !strings.HasPrefix(part, "?") {
			parts[i] = sundayAsZero(part, lo, hi, step)
		}
		off += len(part) + 1
	}
	return strings.Join(parts, ","), nil
}

// sundayAsZero rewrites a weekday part that selects 7 as the list of the
// days it selects, Sunday as 0 (robfig/cron knows weekdays 0-6 only).
func sundayAsZero(part string, lo, hi, step int) string {
	if hi < 7 || (7-lo)%step != 0 {
		return part
	}
	days := []string{"0"}
	for v := lo; v < 7; v += step {
		days = append(days, strconv.Itoa(v))
	}
	return strings.Join(days, ",")
}

// checkPart reads "*", "?", "a", "a-b", each optionally followed by
// "/step", and returns the values it spans.
func (f field) checkPart(part string) (lo, hi, step int, err error) {
	if part == "" {
		return 0, 0, 0, fmt.Errorf("empty list item")
	}
	rng, stepText, hasStep := strings.Cut(part, "/")
	step = 1
	if hasStep {
		n, err := strconv.Atoi(stepText)
		if err != nil || n < 1 {
			return 0, 0, 0, fmt.Errorf("step %q must be a whole number of at least 1", stepText)
		}
		step = n
	}
	lo, hi = f.min, f.max
	switch {
	case rng == "*":
	case rng == "?":
		if f.name != "day-of-month" && f.name != "day-of-week" {
			return 0, 0, 0, fmt.Errorf("? is only allowed in day-of-month and day-of-week")
		}
	default:
		a, b, isRange := strings.Cut(rng, "-")
		if lo, err = f.value(a); err != nil {
			return 0, 0, 0, err
		}
		hi = lo
		if isRange {
			if hi, err = f.value(b); err != nil {
				return 0, 0, 0, err
			}
			if hi < lo {
				return 0, 0, 0, fmt.Errorf("range %s starts after it ends", rng)
			}
		} else if hasStep {
			hi = f.max // "5/20" means from 5 to the end, every 20
		}
	}
	return lo, hi, step, nil
}

// value reads a number or, for months and weekdays, a name.
func (f field) value(s string) (int, error) {
	if n, err := strconv.Atoi(s); err == nil {
		if n < f.min || n > f.max {
			return 0, fmt.Errorf("%d is out of range %d-%d", n, f.min, f.max)
		}
		return n, nil
	}
	for i, name := range f.names {
		if strings.EqualFold(s, name) {
			return f.min + i, nil
		}
	}
	if f.names != nil {
		return 0, fmt.Errorf("%q is neither a number in %d-%d nor a name %s-%s",
			s, f.min, f.max, f.names[0], f.names[len(f.names)-1])
	}
	return 0, fmt.Errorf("%q is not a number in %d-%d", s, f.min, f.max)
}

// daysIn returns the number of days of month m in year y.
func daysIn(m time.Month, y int) int {
	return time.Date(y, m+1, 0, 0, 0, 0, 0, time.UTC).Day()
}
