// Package clock is the time knit serve's controllers read and wait on:
// the real clock in production, a Fake that tests move by hand, so that
// no test of a controller waits on a wall-clock interval.
package clock

import "time"

// Clock tells the time and makes timers and tickers.
type Clock interface {
	Now() time.Time
	// NewTicker ticks every d (d > 0), as time.NewTicker.
	NewTicker(d time.Duration) Ticker
	// AfterFunc calls f in its own goroutine once d has passed, unless
	// stopped first, as time.AfterFunc.
	AfterFunc(d time.Duration, f func()) Timer
}

// Ticker is a time.Ticker.
type Ticker interface {
	C() <-chan time.Time
	Stop()
}

// Timer is a timer made by AfterFunc. Stop reports whether it stopped
// the call (false: f ran or runs already, or it was stopped before).
type Timer interface {
	Stop() bool
}

// Real is the system's clock.
func Real() Clock { return realClock{} }

type realClock struct{}

func (realClock) Now() time.Time                            { return time.Now() }
func (realClock) NewTicker(d time.Duration) Ticker          { return realTicker{time.NewTicker(d)} }
func (realClock) AfterFunc(d time.Duration, f func()) Timer { return time.AfterFunc(d, f) }

type realTicker struct{ t *time.Ticker }

func (t realTicker) C() <-chan time.Time { return t.t.C }
func (t realTicker) Stop()               { t.t.Stop() }

// Or is c, or the real clock when c is nil.
func Or(c Clock) Clock {
	if c == nil {
		return Real()
	}
	return c
}
