package engine

import (
	"bytes"
	"sort"
	"strings"
	"sync"
)

// logBuffer collects one component's tool output. Redacted replaces every
// known sensitive value, so secrets never reach the store or the terminal
// even when a module forgets to mark a variable sensitive.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *logBuffer) Redacted(secrets []string) string {
	l.mu.Lock()
	s := l.buf.String()
	l.mu.Unlock()
	return redact(s, secrets)
}

// redact replaces each secret (longest first, so overlapping ones go whole) in s.
func redact(s string, secrets []string) string {
	sorted := append([]string(nil), secrets...)
	sort.Slice(sorted, func(i, j int) bool { return len(sorted[i]) > len(sorted[j]) })
	for _, sec := range sorted {
		if len(sec) < 4 { // too short to be a secret worth hiding; would mangle the log
			continue
		}
		s = strings.ReplaceAll(s, sec, "(sensitive value)")
	}
	return s
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}
