package knit

import (
	"sync"
	"unique"

	"knit.dev/knit/internal/spec"
)

// revKey names one revision of one environment.
type revKey struct {
	env string
	rev int
}

// revCache keeps what is derived from revisions, which never change once
// recorded: parsed specs and their outlines. When full it starts over,
// which is simple and keeps memory bounded. It is safe for concurrent use;
// callers must not modify what it returns.
type revCache[V any] struct {
	mu  sync.RWMutex
	max int
	m   map[revKey]V
}

func (c *revCache[V]) get(k revKey) (V, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	v, ok := c.m[k]
	return v, ok
}

func (c *revCache[V]) put(k revKey, v V) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil || len(c.m) >= c.max {
		c.m = make(map[revKey]V, min(c.max, 1024))
	}
	c.m[k] = v
}

// Bounds of the caches. Outlines are small (names, types, dependencies),
// so a server keeps one for every environment of a large installation;
// whole specs are bigger and needed less often.
const (
	maxSpecs    = 1024
	maxOutlines = 1 << 15
)

// outlineComponent is what an environment's view needs of one component
// of its applied spec.
type outlineComponent struct {
	Name, Type        string
	DependsOn         []string
	DestroyProtection bool
}

// outlineOf lists env's components in order with their types and
// dependencies. Names are interned: thousands of environments made from
// the same template share them.
func outlineOf(env *spec.Environment) []outlineComponent {
	out := make([]outlineComponent, len(env.Spec.Components))
	for i, c := range env.Spec.Components {
		deps := env.Dependencies(c)
		for j, d := range deps {
			deps[j] = intern(d)
		}
		out[i] = outlineComponent{Name: intern(c.Name), Type: intern(c.Type), DependsOn: deps, DestroyProtection: c.DestroyProtection}
	}
	return out
}

func intern(s string) string { return unique.Make(s).Value() }
