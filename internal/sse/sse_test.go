package sse_test

import (
	"net/http/httptest"
	"testing"
	"time"

	"knit.dev/knit/internal/sse"
)

// TestStreamWritesEventsAndComments: headers first, then each event with
// its id, a data line per line of data, and comments.
func TestStreamWritesEventsAndComments(t *testing.T) {
	rec := httptest.NewRecorder()
	st, err := sse.Open(rec, time.Second) // a recorder has no deadlines: not an error
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Send(7, "ev", "line one\nline two"); err != nil {
		t.Fatal(err)
	}
	if err := st.Send(0, "done", "done"); err != nil {
		t.Fatal(err)
	}
	if err := st.Comment("keep-alive"); err != nil {
		t.Fatal(err)
	}
	want := "id: 7\nevent: ev\ndata: line one\ndata: line two\n\nevent: done\ndata: done\n\n: keep-alive\n\n"
	if got := rec.Body.String(); got != want {
		t.Errorf("stream:\n%q\nwant\n%q", got, want)
	}
	if ct := rec.Header().Get("Content-Type"); ct != "text/event-stream" || !rec.Flushed {
		t.Errorf("content type %q, flushed %v", ct, rec.Flushed)
	}
}
