package server

import (
	"bytes"
	"encoding/json"
	"sync"
	"sync/atomic"

	"knit.dev/knit/internal/view"
)

// viewCache keeps environments' views as encoded JSON, each with the
// environment's version when it was read (view.EnvironmentVersion). The
// version grows with every write to what the view shows, whichever process
// makes it, so a request that reads an unchanged version sends the bytes
// without reading the view's rows or encoding them again. The version is
// read before the view, so a view cached under it is never newer than the
// version says; a write in between only costs a miss.
//
// The cache is bounded in bytes. Past the bound, arbitrary entries go: the
// requests it serves hit environments at random, so recency buys little.
type viewCache struct {
	mu      sync.Mutex
	max     int
	size    int
	entries map[viewKey]cachedView
	// hits and misses count lookups by viewKind (a page of summaries
	// counts once), for /metrics.
	hits, misses [2]atomic.Int64
}

// viewKind tells an environment's views apart.
type viewKind byte

const (
	summaryView viewKind = iota // one item of GET /environments
	detailView                  // GET /environments/{team}/{env}
)

func (k viewKind) String() string { return [...]string{"summary", "detail"}[k] }

// counted counts a lookup of kind that hit or missed, and returns hit.
func (c *viewCache) counted(kind viewKind, hit bool) bool {
	if hit {
		c.hits[kind].Add(1)
	} else {
		c.misses[kind].Add(1)
	}
	return hit
}

type viewKey struct {
	kind viewKind
	id   string
}

type cachedView struct {
	version int64
	body    []byte
}

// defaultViewCacheBytes holds the detail and summary of about 7,000
// environments of 20 components (about 9 KiB and 0.5 KiB each).
const defaultViewCacheBytes = 64 << 20

func newViewCache(maxBytes int) *viewCache {
	return &viewCache{max: maxBytes, entries: map[viewKey]cachedView{}}
}

// get returns the view cached for id at version.
func (c *viewCache) get(kind viewKind, id string, version int64) ([]byte, bool) {
	if c.max <= 0 {
		return nil, false
	}
	c.mu.Lock()
	v, ok := c.entries[viewKey{kind, id}]
	c.mu.Unlock()
	if !c.counted(kind, ok && v.version == version) {
		return nil, false
	}
	return v.body, true
}

// getPage returns the summaries cached for every one of vs, in order, or
// false if any is missing or older.
func (c *viewCache) getPage(vs []view.EnvironmentVersion) ([][]byte, bool) {
	if c.max <= 0 {
		return nil, false
	}
	out := make([][]byte, 0, len(vs))
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, v := range vs {
		e, ok := c.entries[viewKey{summaryView, v.ID}]
		if !ok || e.version != v.Version {
			return nil, c.counted(summaryView, false)
		}
		out = append(out, e.body)
	}
	return out, c.counted(summaryView, true)
}

// put caches body as id's view at version. body must not change afterwards.
func (c *viewCache) put(kind viewKind, id string, version int64, body []byte) {
	if c.max <= 0 || len(body) > c.max/16 {
		return
	}
	k := viewKey{kind, id}
	c.mu.Lock()
	defer c.mu.Unlock()
	if old, ok := c.entries[k]; ok {
		if old.version > version { // a slower request read an older view
			return
		}
		c.size -= entrySize(k, old)
	}
	c.entries[k] = cachedView{version, body}
	c.size += entrySize(k, c.entries[k])
	for victim, v := range c.entries { // map order is arbitrary
		if c.size <= c.max {
			break
		}
		if victim != k {
			delete(c.entries, victim)
			c.size -= entrySize(victim, v)
		}
	}
}

// entrySize is what an entry costs, its map slot and headers included.
func entrySize(k viewKey, v cachedView) int { return len(k.id) + len(v.body) + 64 }

// encodeJSON encodes v as writeJSON does, into a slice of its own.
func encodeJSON(v any) ([]byte, error) {
	var buf bytes.Buffer
	if err := encodeInto(&buf, v); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// encodeInto is every response's encoding: JSON, HTML left unescaped,
// newline-terminated.
func encodeInto(buf *bytes.Buffer, v any) error {
	enc := json.NewEncoder(buf)
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}

// pageJSON is writeJSON of a page whose items are already encoded (each
// with encodeJSON's trailing newline).
func pageJSON(items [][]byte, next string) ([]byte, error) {
	n := 32 + len(next)
	for _, it := range items {
		n += len(it)
	}
	b := make([]byte, 0, n)
	b = append(b, `{"items":[`...)
	for i, it := range items {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, bytes.TrimSuffix(it, []byte("\n"))...)
	}
	b = append(b, ']')
	if next != "" {
		q, err := encodeJSON(next)
		if err != nil {
			return nil, err
		}
		b = append(b, `,"next":`...)
		b = append(b, bytes.TrimSuffix(q, []byte("\n"))...)
	}
	return append(b, "}\n"...), nil
}
