package spec

import (
	"crypto/sha256"
	"sync"

	"gopkg.in/yaml.v3"
)

// maxCachedDocs bounds a DocCache: past it, it starts again empty.
const maxCachedDocs = 256

// DocCache keeps the parsed YAML of template files by their content, so
// that the environments built from one template parse it once (GitOps: a
// commit of 500 environments using one template). Each parse is handed a
// copy of its own to substitute parameters in. Safe for concurrent use.
type DocCache struct {
	mu   sync.Mutex
	docs map[[sha256.Size]byte]cachedDoc
}

type cachedDoc struct {
	root  *yaml.Node
	extra extraDoc
	err   error
}

// NewDocCache returns an empty DocCache.
func NewDocCache() *DocCache { return &DocCache{docs: map[[sha256.Size]byte]cachedDoc{}} }

// firstDocument is the package's firstDocument of data, from c when it
// parsed the same bytes before (nil c: parsed afresh).
func (c *DocCache) firstDocument(data []byte) (*yaml.Node, extraDoc, error) {
	if c == nil {
		return firstDocument(data)
	}
	key := sha256.Sum256(data)
	c.mu.Lock()
	d, ok := c.docs[key]
	c.mu.Unlock()
	if !ok {
		d.root, d.extra, d.err = firstDocument(data)
		c.mu.Lock()
		if len(c.docs) >= maxCachedDocs {
			clear(c.docs)
		}
		c.docs[key] = d
		c.mu.Unlock()
	}
	return cloneNode(d.root, map[*yaml.Node]*yaml.Node{}), d.extra, d.err
}

// cloneNode copies the tree at n, aliases pointing into the copy as they
// pointed into n.
func cloneNode(n *yaml.Node, seen map[*yaml.Node]*yaml.Node) *yaml.Node {
	if n == nil {
		return nil
	}
	if c, ok := seen[n]; ok {
		return c
	}
	c := &yaml.Node{}
	*c = *n
	seen[n] = c
	if n.Content != nil {
		c.Content = make([]*yaml.Node, len(n.Content))
		for i, k := range n.Content {
			c.Content[i] = cloneNode(k, seen)
		}
	}
	c.Alias = cloneNode(n.Alias, seen)
	return c
}
