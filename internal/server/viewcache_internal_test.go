package server

import (
	"fmt"
	"testing"
)

// TestTheViewCacheStaysWithinItsBound: however many views are put, the
// cache holds at most its bound, never replaces a view with an older one,
// and does not keep a view at another version.
func TestTheViewCacheStaysWithinItsBound(t *testing.T) {
	c := newViewCache(64 << 10)
	body := make([]byte, 1000)
	for i := range 1000 {
		c.put(detailView, fmt.Sprintf("team/env%04d", i), 1, body)
		if c.size > c.max {
			t.Fatalf("after %d puts the cache holds %d bytes, over its %d", i+1, c.size, c.max)
		}
	}
	if n := len(c.entries); n < 50 || n > 64 {
		t.Errorf("a 64 KiB cache of 1 KB views holds %d of them", n)
	}
	c.put(summaryView, "team/x", 5, []byte("new"))
	c.put(summaryView, "team/x", 4, []byte("old"))
	if b, ok := c.get(summaryView, "team/x", 5); !ok || string(b) != "new" {
		t.Errorf("version 5 after an older put: %q, %v", b, ok)
	}
	if _, ok := c.get(summaryView, "team/x", 6); ok {
		t.Error("a view cached at version 5 was served for version 6")
	}
	if _, ok := c.get(detailView, "team/x", 5); ok {
		t.Error("a summary was served as a detail")
	}
	c.put(detailView, "team/huge", 1, make([]byte, c.max/8))
	if _, ok := c.get(detailView, "team/huge", 1); ok {
		t.Error("a view of an eighth of the bound was cached")
	}
	off := newViewCache(-1)
	off.put(detailView, "team/x", 1, body)
	if _, ok := off.get(detailView, "team/x", 1); ok {
		t.Error("a disabled cache served a view")
	}
}
