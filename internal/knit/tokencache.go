package knit

import (
	"sync"
	"time"

	"knit.dev/knit/internal/store"
)

// tokenTTL is how long a looked-up token is trusted without asking the
// store again: how late a token revoked by another process (knit token
// revoke on the same data directory) is refused. One revoked through this
// Knit is refused at once.
const tokenTTL = time.Second

// maxCachedTokens bounds the cache; there are seldom more live tokens.
const maxCachedTokens = 1024

// tokenCache keeps live tokens by the hash of their secret, so that a
// server does not look every request's token up in the store. It is safe
// for concurrent use.
type tokenCache struct {
	mu sync.RWMutex
	m  map[string]cachedToken
	// gen counts invalidations: a lookup that began before one must not
	// put what it read (the token may have been revoked since).
	gen uint64
}

type cachedToken struct {
	t  store.Token
	at time.Time
}

// get returns the token cached for hash if it was read less than tokenTTL
// before now, and the generation to pass to put after a store lookup.
func (c *tokenCache) get(hash string, now time.Time) (store.Token, bool, uint64) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	e, ok := c.m[hash]
	if ok && now.Sub(e.at) >= 0 && now.Sub(e.at) < tokenTTL {
		return e.t, true, c.gen
	}
	return store.Token{}, false, c.gen
}

// put caches t read at now, unless the cache was invalidated since gen.
func (c *tokenCache) put(hash string, t store.Token, now time.Time, gen uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if gen != c.gen {
		return
	}
	if c.m == nil || len(c.m) >= maxCachedTokens {
		c.m = map[string]cachedToken{}
	}
	c.m[hash] = cachedToken{t: t, at: now}
}

// invalidate forgets every token.
func (c *tokenCache) invalidate() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.gen++
	c.m = nil
}
