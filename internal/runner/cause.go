package runner

import (
	"bytes"
	"strings"
	"sync"
)

// ToolError is a tool's failure with the tool's own first error diagnostic
// in front: people read Cause ("No value for required variable …"), one
// line, first; operators still get Err's chain (the exit status and the end
// of stderr) after it. The component's log keeps everything.
type ToolError struct {
	Cause string
	Err   error
}

// Error is the cause on the first line, then the tool's error.
func (e *ToolError) Error() string { return e.Cause + "\n" + e.Err.Error() }

// Unwrap returns the tool's error.
func (e *ToolError) Unwrap() error { return e.Err }

// WithCause puts cause in front of err (see ToolError); err is returned as
// it is when nil, when cause is empty, or when its message already starts
// with cause.
func WithCause(err error, cause string) error {
	cause = strings.TrimSpace(cause)
	if err == nil || cause == "" || strings.HasPrefix(err.Error(), cause) {
		return err
	}
	return &ToolError{Cause: oneLine(cause), Err: err}
}

// maxCause bounds a cause: a summary line, not a log.
const maxCause = 400

// oneLine joins s's lines with spaces and cuts it to maxCause bytes (on a
// rune boundary).
func oneLine(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) <= maxCause {
		return s
	}
	cut := maxCause
	for cut > 0 && s[cut]&0xC0 == 0x80 {
		cut--
	}
	return s[:cut] + "…"
}

// CauseWriter watches what a script prints on stderr for the line that
// says why it failed: the first line that starts with "error" (any case,
// "Error:", "ERROR ", "error[E1]"…), else the last non-empty line. It keeps
// at most two lines of maxCause bytes, whatever the output's size. It is
// safe for concurrent use.
type CauseWriter struct {
	mu            sync.Mutex
	line          []byte // the line being written, cut at maxCause
	first, latest string
}

// Write takes any part of the output.
func (w *CauseWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := len(p)
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		chunk := p
		if i >= 0 {
			chunk = p[:i]
		}
		if room := maxCause + 1 - len(w.line); room > 0 {
			w.line = append(w.line, chunk[:min(room, len(chunk))]...)
		}
		if i < 0 {
			break
		}
		w.end()
		p = p[i+1:]
	}
	return n, nil
}

// end takes the line written so far.
func (w *CauseWriter) end() {
	l := strings.TrimSpace(string(w.line))
	w.line = w.line[:0]
	if l == "" {
		return
	}
	w.latest = l
	if w.first == "" && strings.HasPrefix(strings.ToLower(l), "error") {
		w.first = l
	}
}

// Cause is the line found so far ("" when the output was empty).
func (w *CauseWriter) Cause() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(bytes.TrimSpace(w.line)) > 0 {
		w.end()
	}
	if w.first != "" {
		return oneLine(w.first)
	}
	return oneLine(w.latest)
}
