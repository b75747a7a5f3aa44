package server_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"

	"knit.dev/knit/internal/engine"
)

// sseEvent is one server-sent event as a client reads it.
type sseEvent struct {
	ID    int64
	Event string
	Data  json.RawMessage
}

// readSSE reads events from r until it ends, handing each to fn (which may
// stop the reading by returning false). Comment lines are skipped.
func readSSE(r io.Reader, fn func(sseEvent) bool) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	var ev sseEvent
	var have bool
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
			if have {
				if !fn(ev) {
					return nil
				}
			}
			ev, have = sseEvent{}, false
		case strings.HasPrefix(line, ":"):
		case strings.HasPrefix(line, "id: "):
			id, err := strconv.ParseInt(strings.TrimPrefix(line, "id: "), 10, 64)
			if err != nil {
				return fmt.Errorf("event id %q: %w", line, err)
			}
			ev.ID, have = id, true
		case strings.HasPrefix(line, "event: "):
			ev.Event, have = strings.TrimPrefix(line, "event: "), true
		case strings.HasPrefix(line, "data: "):
			ev.Data, have = json.RawMessage(strings.TrimPrefix(line, "data: ")), true
		default:
			return fmt.Errorf("unexpected line in the event stream: %q", line)
		}
	}
	return sc.Err()
}

// decodeSSE reads a text/event-stream as the document describes it: the
// list of its events, each {id, event, data}.
func decodeSSE(body io.Reader, _ http.Header, _ *openapi3.SchemaRef, _ openapi3filter.EncodingFn) (any, error) {
	out := []any{}
	err := readSSE(body, func(ev sseEvent) bool {
		var data any
		if err := json.Unmarshal(ev.Data, &data); err != nil {
			data = string(ev.Data) // the schema will say it is not an event
		}
		out = append(out, map[string]any{"id": float64(ev.ID), "event": ev.Event, "data": data})
		return true
	})
	return out, err
}

func init() { openapi3filter.RegisterBodyDecoder("text/event-stream", decodeSSE) }

// stream is a server-sent event stream being read.
type stream struct {
	c      call
	events chan sseEvent
	done   chan struct{}
	resp   response // complete once done is closed
	err    error
	cancel context.CancelFunc
}

// stream opens an event stream (which must answer 200) and reads it in the
// background; finish checks the whole exchange against the document.
func (h *harness) stream(c call) *stream {
	h.t.Helper()
	req, _, err := c.request(h.base)
	if err != nil {
		h.t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
	h.t.Cleanup(cancel)
	resp, err := http.DefaultClient.Do(req.WithContext(ctx))
	if err != nil {
		h.t.Fatalf("%s %s: %v", c.method, c.path, err)
	}
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		h.check(c, nil, response{status: resp.StatusCode, header: resp.Header, body: body})
		h.t.Fatalf("%s %s: status %d: %s", c.method, c.path, resp.StatusCode, body)
	}
	s := &stream{c: c, events: make(chan sseEvent, 1024), done: make(chan struct{}), cancel: cancel,
		resp: response{status: resp.StatusCode, header: resp.Header}}
	go func() {
		defer close(s.done)
		defer resp.Body.Close()
		var buf bytes.Buffer
		s.err = readSSE(io.TeeReader(resp.Body, &buf), func(ev sseEvent) bool { s.events <- ev; return true })
		close(s.events)
		s.resp.body = buf.Bytes()
	}()
	return s
}

// next is the stream's next event; ok is false at its end.
func (s *stream) next(t *testing.T) (sseEvent, bool) {
	t.Helper()
	select {
	case ev, ok := <-s.events:
		return ev, ok
	case <-time.After(hangGuard):
		t.Fatalf("hang guard: no event on %s", s.c.path)
		return sseEvent{}, false
	}
}

// rest reads the stream to its end, checks the exchange against the
// document, and returns the events not read yet.
func (s *stream) rest(h *harness) []sseEvent {
	h.t.Helper()
	var out []sseEvent
	for {
		ev, ok := s.next(h.t)
		if !ok {
			break
		}
		out = append(out, ev)
	}
	waitFor(h.t, "the end of the event stream", s.done)
	if s.err != nil {
		h.t.Fatalf("read %s: %v", s.c.path, s.err)
	}
	h.check(s.c, nil, s.resp)
	return out
}

// eventData decodes an event's data.
func eventData(t *testing.T, ev sseEvent) engine.Event {
	t.Helper()
	var e engine.Event
	if err := json.Unmarshal(ev.Data, &e); err != nil {
		t.Fatalf("event %d: %v: %s", ev.ID, err, ev.Data)
	}
	return e
}
