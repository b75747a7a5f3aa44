package knit

import (
	"sync"

	"knit.dev/knit/internal/spec"
)

// specCache keeps parsed specs of revisions, which never change once
// recorded. Callers must not modify what it returns.
type specCache struct {
	mu sync.Mutex
	m  map[string]*spec.Environment
}

const maxSpecs = 4096

func (c *specCache) get(key string) (*spec.Environment, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	env, ok := c.m[key]
	return env, ok
}

func (c *specCache) put(key string, env *spec.Environment) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil || len(c.m) >= maxSpecs {
		c.m = map[string]*spec.Environment{} // simple and bounded: start over
	}
	c.m[key] = env
}
