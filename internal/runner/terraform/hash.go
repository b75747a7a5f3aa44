package terraform

import (
	"crypto/sha256"
	"encoding/hex"
	"io"
	"os"
	"sync"
	"time"
)

// fileHashes caches the SHA-256 of files by path, trusting an entry while
// the file's size, modification time and mode are unchanged.
type fileHashes struct {
	mu sync.Mutex
	m  map[string]hashEntry
}

type hashEntry struct {
	size  int64
	mtime time.Time
	mode  os.FileMode
	sum   string
}

func (h *fileHashes) file(p string) (string, error) {
	st, err := os.Stat(p)
	if err != nil {
		return "", err
	}
	h.mu.Lock()
	e, ok := h.m[p]
	h.mu.Unlock()
	if ok && e.size == st.Size() && e.mtime.Equal(st.ModTime()) && e.mode == st.Mode() {
		return e.sum, nil
	}
	sum, err := hashFile(p)
	if err != nil {
		return "", err
	}
	h.mu.Lock()
	if h.m == nil {
		h.m = map[string]hashEntry{}
	}
	h.m[p] = hashEntry{size: st.Size(), mtime: st.ModTime(), mode: st.Mode(), sum: sum}
	h.mu.Unlock()
	return sum, nil
}

// sum returns the SHA-256 of f's content.
func (h *fileHashes) sum(f file) (string, error) {
	if f.src != "" {
		return h.file(f.src)
	}
	s := sha256.Sum256(f.data)
	return hex.EncodeToString(s[:]), nil
}

func hashFile(p string) (string, error) {
	f, err := os.Open(p)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}
