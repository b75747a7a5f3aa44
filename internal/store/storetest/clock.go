package storetest

import (
	"sync"
	"time"
)

// clock is the fake time a store under test runs on. It is safe for
// concurrent use: stores read it from any goroutine.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

// Now is the clock's time, handed to the store as its clock.
func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// set moves the clock to t.
func (c *clock) set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = t
}
