// Package sse writes server-sent event streams for the API and the
// dashboard. A stream outlives the server's read timeout, which bounds
// only how long a client may take to send its request (net/http lifts the
// read deadline once the request is read), and the server has no global
// write timeout, which would end every stream. Instead every write gets a
// deadline of its own, so a client that stops reading is cut rather than
// holding its connection (and a goroutine) forever.
package sse

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"
)

// Stream is one event stream. It is not safe for concurrent use.
type Stream struct {
	w       http.ResponseWriter
	rc      *http.ResponseController
	timeout time.Duration
}

// Open answers 200 with an event stream's headers and flushes them.
// writeTimeout bounds each later write (0: no bound). It fails when the
// connection cannot stream.
func Open(w http.ResponseWriter, writeTimeout time.Duration) (*Stream, error) {
	s := &Stream{w: w, rc: http.NewResponseController(w), timeout: writeTimeout}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.Header().Set("X-Accel-Buffering", "no")
	if err := s.deadline(); err != nil {
		return nil, err
	}
	w.WriteHeader(http.StatusOK)
	if err := s.rc.Flush(); err != nil {
		return nil, fmt.Errorf("streaming is not supported by this connection: %w", err)
	}
	return s, nil
}

// deadline gives the next write its own deadline.
func (s *Stream) deadline() error {
	if s.timeout <= 0 {
		return nil
	}
	if err := s.rc.SetWriteDeadline(time.Now().Add(s.timeout)); err != nil && !errors.Is(err, http.ErrNotSupported) {
		return err
	}
	return nil
}

// Send writes one event (id 0: none); data may span lines. An error means
// the client is gone or too slow: end the stream.
func (s *Stream) Send(id int64, event, data string) error {
	var b strings.Builder
	if id > 0 {
		fmt.Fprintf(&b, "id: %d\n", id)
	}
	fmt.Fprintf(&b, "event: %s\n", event)
	for _, line := range strings.Split(data, "\n") {
		fmt.Fprintf(&b, "data: %s\n", line)
	}
	b.WriteString("\n")
	return s.write(b.String())
}

// Comment writes a comment line, which keeps idle connections open.
func (s *Stream) Comment(text string) error { return s.write(": " + text + "\n\n") }

func (s *Stream) write(text string) error {
	if err := s.deadline(); err != nil {
		return err
	}
	if _, err := fmt.Fprint(s.w, text); err != nil {
		return err
	}
	return s.rc.Flush()
}
