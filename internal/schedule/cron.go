package schedule

import (
	"fmt"
	"math/bits"
	"strconv"
	"strings"
	"time"
)

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
	// 7 is Sunday too; Next folds it onto 0.
	{name: "day-of-week", min: 0, max: 7, names: []string{"SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT"}},
}

// cron is a parsed five-field expression: one bit per allowed value.
type cron struct {
	minute, hour, dom, month, dow uint64
	// domStar and dowStar record an unrestricted (* or ?) day field, which
	// switches day matching from "either" to "both".
	domStar, dowStar bool
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

func parseCron(s string) (Schedule, error) {
	toks := splitFields(s)
	if len(toks) != 5 {
		return nil, &Error{Input: s, Msg: fmt.Sprintf(
			"want 5 fields (minute hour day-of-month month day-of-week), got %d", len(toks))}
	}
	var sets [5]uint64
	for i, tok := range toks {
		set, err := fields[i].parse(s, tok)
		if err != nil {
			return nil, err
		}
		sets[i] = set
	}
	c := &cron{minute: sets[0], hour: sets[1], dom: sets[2], month: sets[3], dow: sets[4]}
	if c.dow&(1<<7) != 0 {
		c.dow = c.dow&^(1<<7) | 1
	}
	c.domStar = isStar(toks[2].text)
	c.dowStar = isStar(toks[4].text)
	if err := c.checkReachable(s, toks[2].off); err != nil {
		return nil, err
	}
	return c, nil
}

func isStar(s string) bool { return s == "*" || s == "?" || s == "*/1" }

// checkReachable rejects day-of-month sets that no selected month has, such
// as "30 2": without a weekday to fall back on, they would never fire.
func (c *cron) checkReachable(s string, off int) error {
	if c.dowStar {
		firstDay := bits.TrailingZeros64(c.dom)
		for m := 1; m <= 12; m++ {
			if c.month&(1<<m) != 0 && firstDay <= daysIn(time.Month(m), 2000) {
				return nil
			}
		}
		return &Error{Input: s, Field: "day-of-month", Offset: off, Msg: fmt.Sprintf(
			"day %d never occurs in the selected months, so the schedule never fires", firstDay)}
	}
	return nil
}

// parse turns one field's text into a bit set, reporting the first bad part.
func (f field) parse(input string, tok token) (uint64, error) {
	var set uint64
	off := tok.off
	for part := range strings.SplitSeq(tok.text, ",") {
		bitsOf, err := f.parsePart(part)
		if err != nil {
			return 0, &Error{Input: input, Field: f.name, Offset: off, Msg: err.Error()}
		}
		set |= bitsOf
		off += len(part) + 1
	}
	return set, nil
}

// parsePart reads "*", "?", "a", "a-b", each optionally followed by "/step".
func (f field) parsePart(part string) (uint64, error) {
	if part == "" {
		return 0, fmt.Errorf("empty list item")
	}
	rng, stepText, hasStep := strings.Cut(part, "/")
	step := 1
	if hasStep {
		n, err := strconv.Atoi(stepText)
		if err != nil || n < 1 {
			return 0, fmt.Errorf("step %q must be a whole number of at least 1", stepText)
		}
		step = n
	}
	lo, hi := f.min, f.max
	switch {
	case rng == "*":
	case rng == "?":
		if f.name != "day-of-month" && f.name != "day-of-week" {
			return 0, fmt.Errorf("? is only allowed in day-of-month and day-of-week")
		}
	default:
		a, b, isRange := strings.Cut(rng, "-")
		var err error
		if lo, err = f.value(a); err != nil {
			return 0, err
		}
		hi = lo
		if isRange {
			if hi, err = f.value(b); err != nil {
				return 0, err
			}
			if hi < lo {
				return 0, fmt.Errorf("range %s starts after it ends", rng)
			}
		} else if hasStep {
			hi = f.max // "5/20" means from 5 to the end, every 20
		}
	}
	var set uint64
	for v := lo; v <= hi; v += step {
		set |= 1 << v
	}
	return set, nil
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

// searchYears bounds Next's search: a leap day can be eight years away.
const searchYears = 9

// Next returns the first minute after after that the expression matches.
func (c *cron) Next(after time.Time) time.Time {
	loc := after.Location()
	t := time.Date(after.Year(), after.Month(), after.Day(), after.Hour(), after.Minute()+1, 0, 0, loc)
	limit := after.Year() + searchYears
	// Each step moves t forward to the start of the next candidate month,
	// day, hour or minute; every step strictly advances, so this ends.
	for t.Year() <= limit {
		switch {
		case c.month&(1<<uint(t.Month())) == 0:
			t = time.Date(t.Year(), t.Month()+1, 1, 0, 0, 0, 0, loc)
		case !c.dayMatches(t):
			t = time.Date(t.Year(), t.Month(), t.Day()+1, 0, 0, 0, 0, loc)
		case c.hour&(1<<uint(t.Hour())) == 0:
			t = t.Add(time.Duration(60-t.Minute()) * time.Minute)
		case c.minute&(1<<uint(t.Minute())) == 0:
			t = t.Add(time.Minute)
		default:
			return t
		}
	}
	return time.Time{}
}

// dayMatches applies cron's day rule: with both day fields restricted, a day
// matches if either does; otherwise both must (one of them is all days).
func (c *cron) dayMatches(t time.Time) bool {
	dom := c.dom&(1<<uint(t.Day())) != 0
	dow := c.dow&(1<<uint(t.Weekday())) != 0
	if !c.domStar && !c.dowStar {
		return dom || dow
	}
	return dom && dow
}

// daysIn returns the number of days of month m in year y.
func daysIn(m time.Month, y int) int {
	return time.Date(y, m+1, 0, 0, 0, 0, 0, time.UTC).Day()
}
