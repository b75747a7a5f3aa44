package engine

import (
	"bytes"
	"sort"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"
)

// masked is what a secret is replaced with.
const masked = "(sensitive value)"

// logBuffer collects one component's tool output. Redacted replaces every
// known sensitive value, so secrets never reach the store or the terminal
// even when a module forgets to mark a variable sensitive. When lines is
// set, each complete line is handed to it as it is written, for live logs.
type logBuffer struct {
	mu      sync.Mutex
	buf     bytes.Buffer
	partial []byte
	lines   func(string)
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.buf.Write(p)
	if l.lines == nil {
		return len(p), nil
	}
	l.partial = append(l.partial, p...)
	for {
		i := bytes.IndexByte(l.partial, '\n')
		if i < 0 {
			break
		}
		l.lines(string(bytes.TrimRight(l.partial[:i], "\r")))
		l.partial = l.partial[i+1:]
	}
	return len(p), nil
}

func (l *logBuffer) Redacted(secrets []string) string {
	l.mu.Lock()
	s := l.buf.String()
	l.mu.Unlock()
	return redact(s, secrets)
}

// shortSecret is the length below which a secret is masked only where it
// stands as a whole value (not inside a longer word): a 2-character
// password is masked wherever it appears on its own, and "ab" does not
// turn "about" into noise. Longer secrets are masked wherever they appear.
const shortSecret = 8

// redact replaces each secret in s, longest first so overlapping ones go
// whole. Secrets of any length are masked.
func redact(s string, secrets []string) string {
	sorted := make([]string, 0, len(secrets))
	for _, sec := range secrets {
		if sec != "" {
			sorted = append(sorted, sec)
		}
	}
	sort.Slice(sorted, func(i, j int) bool { return len(sorted[i]) > len(sorted[j]) })
	for _, sec := range sorted {
		if len(sec) >= shortSecret {
			s = strings.ReplaceAll(s, sec, masked)
		} else {
			s = replaceWhole(s, sec)
		}
	}
	return s
}

// replaceWhole masks each occurrence of sec in s that is not part of a
// longer word: the characters on either side are not letters or digits.
func replaceWhole(s, sec string) string {
	var b strings.Builder
	rest := s
	for {
		i := strings.Index(rest, sec)
		if i < 0 {
			b.WriteString(rest)
			return b.String()
		}
		b.WriteString(rest[:i])
		after, _ := utf8.DecodeRuneInString(rest[i+len(sec):])
		if !wordRune(lastRune(b.String())) && !wordRune(after) {
			b.WriteString(masked)
			rest = rest[i+len(sec):]
			continue
		}
		// Not a whole value here: keep its first rune and look further.
		_, n := utf8.DecodeRuneInString(rest[i:])
		b.WriteString(rest[i : i+n])
		rest = rest[i+n:]
	}
}

func lastRune(s string) rune {
	r, _ := utf8.DecodeLastRuneInString(s)
	return r
}

// wordRune reports whether r continues a word (utf8.RuneError stands for
// "no character": the start or end of the text).
func wordRune(r rune) bool {
	return r != utf8.RuneError && (unicode.IsLetter(r) || unicode.IsDigit(r) || r == '_')
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}
