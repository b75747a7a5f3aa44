package clock

import (
	"sort"
	"sync"
	"time"
)

// Fake is a Clock that moves only when told (Advance): tickers tick and
// timers fire as their times pass, in order. Safe for concurrent use.
type Fake struct {
	mu      sync.Mutex
	now     time.Time
	waiters []*waiter
	// changed is closed and replaced whenever a timer or ticker is made
	// or stopped, for WaitFor.
	changed chan struct{}
}

// waiter is a pending timer (f) or ticker (c, every).
type waiter struct {
	at    time.Time
	f     func()
	c     chan time.Time
	every time.Duration
}

// NewFake is a Fake clock at now.
func NewFake(now time.Time) *Fake { return &Fake{now: now, changed: make(chan struct{})} }

// Now is the fake time.
func (f *Fake) Now() time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.now
}

// NewTicker makes a ticker whose channel holds one tick at most, as a real one.
func (f *Fake) NewTicker(d time.Duration) Ticker {
	if d <= 0 {
		panic("clock: non-positive ticker interval")
	}
	w := &waiter{c: make(chan time.Time, 1), every: d}
	f.add(w, d)
	return fakeTicker{f, w}
}

// AfterFunc calls fn in its own goroutine once Advance passes d.
func (f *Fake) AfterFunc(d time.Duration, fn func()) Timer {
	w := &waiter{f: fn}
	f.add(w, d)
	return fakeTimer{f, w}
}

func (f *Fake) add(w *waiter, d time.Duration) {
	f.mu.Lock()
	defer f.mu.Unlock()
	w.at = f.now.Add(d)
	f.waiters = append(f.waiters, w)
	f.signal()
}

// signal wakes WaitFor; f.mu is held.
func (f *Fake) signal() {
	close(f.changed)
	f.changed = make(chan struct{})
}

// Pending is how many timers and tickers wait (not stopped, not fired).
func (f *Fake) Pending() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.waiters)
}

// Changed is closed the next time a timer or ticker is made or stopped:
// a test waits on it for a controller to reach its next wait.
func (f *Fake) Changed() <-chan struct{} {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.changed
}

// Advance moves the clock by d, firing what falls due on the way, in time
// order; a ticker that missed several ticks delivers one, as a real one.
func (f *Fake) Advance(d time.Duration) {
	f.mu.Lock()
	end := f.now.Add(d)
	var fire []func()
	for {
		sort.SliceStable(f.waiters, func(i, j int) bool { return f.waiters[i].at.Before(f.waiters[j].at) })
		if len(f.waiters) == 0 || f.waiters[0].at.After(end) {
			break
		}
		w := f.waiters[0]
		f.now = w.at
		if w.c != nil {
			select {
			case w.c <- w.at:
			default:
			}
			w.at = w.at.Add(w.every)
			continue
		}
		f.waiters = f.waiters[1:]
		fire = append(fire, w.f)
	}
	f.now = end
	f.mu.Unlock()
	for _, fn := range fire {
		go fn()
	}
}

func (f *Fake) stop(w *waiter) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	for i, o := range f.waiters {
		if o == w {
			f.waiters = append(f.waiters[:i:i], f.waiters[i+1:]...)
			f.signal()
			return true
		}
	}
	return false
}

type fakeTicker struct {
	f *Fake
	w *waiter
}

func (t fakeTicker) C() <-chan time.Time { return t.w.c }
func (t fakeTicker) Stop()               { t.f.stop(t.w) }

type fakeTimer struct {
	f *Fake
	w *waiter
}

func (t fakeTimer) Stop() bool { return t.f.stop(t.w) }
