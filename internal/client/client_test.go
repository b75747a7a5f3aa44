package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"knit.dev/knit/internal/engine"
	"knit.dev/knit/internal/knit"
)

func newTestClient(t *testing.T, h http.HandlerFunc) *Client {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	c, err := New(srv.URL, "s3cret", srv.Client())
	if err != nil {
		t.Fatal(err)
	}
	c.retryWait = time.Millisecond
	return c
}

func TestRequestsCarryTheTokenAndQuery(t *testing.T) {
	var got *http.Request
	c := newTestClient(t, func(w http.ResponseWriter, r *http.Request) {
		got = r
		fmt.Fprint(w, `{"items":[{"id":"shop/dev","team":"shop","name":"dev","revision":2,"appliedRevision":1,"status":"provisioned"}],"next":"shop/dev"}`)
	})
	p, err := c.Environments(context.Background(), knit.EnvironmentFilter{Team: "shop", After: "a/b", Limit: 5})
	if err != nil {
		t.Fatal(err)
	}
	if got.URL.Path != "/api/v1/environments" || got.URL.Query().Get("team") != "shop" ||
		got.URL.Query().Get("cursor") != "a/b" || got.URL.Query().Get("limit") != "5" {
		t.Errorf("request %s", got.URL)
	}
	if h := got.Header.Get("Authorization"); h != "Bearer s3cret" {
		t.Errorf("Authorization %q", h)
	}
	if len(p.Items) != 1 || p.Items[0].ID != "shop/dev" || p.Items[0].AppliedRevision != 1 || p.Next != "shop/dev" {
		t.Errorf("page %+v", p)
	}
}

func TestErrorsSayWhatTheServerRefused(t *testing.T) {
	for _, tc := range []struct {
		status int
		body   string
		want   string
		is     error
	}{
		{401, `{"error":{"code":"unauthenticated","message":"bad token"}}`, "the server refused the token: set KNIT_TOKEN (knit token create on the server)", ErrUnauthorized},
		{403, `{"error":{"code":"forbidden","message":"token ci is a viewer; this needs operator"}}`, "the server refused: token ci is a viewer; this needs operator", ErrForbidden},
		{404, `{"error":{"code":"not_found","message":"not found: no environment \"x/y\""}}`, `not found: no environment "x/y"`, ErrNotFound},
		{404, "404 page not found\n", "the server has no /environments/shop/dev/components/web/logs (is it an older knit?)", ErrNotFound},
		{409, `{"error":{"code":"stale_plan","message":"the plan waiting for approval is not the one named"}}`, "the plan waiting for approval is not the one named", ErrConflict},
	} {
		c := newTestClient(t, func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(tc.status)
			io.WriteString(w, tc.body)
		})
		_, err := c.Logs(context.Background(), "shop/dev", "web")
		if err == nil || err.Error() != tc.want || !errors.Is(err, tc.is) {
			t.Errorf("%d: error %v, want %q", tc.status, err, tc.want)
		}
		if err != nil && strings.Contains(err.Error(), "s3cret") {
			t.Errorf("%d: the error shows the token", tc.status)
		}
	}
}

func TestDecideSendsTheChecksumAndReturnsTheRun(t *testing.T) {
	var body map[string]string
	var path string
	c := newTestClient(t, func(w http.ResponseWriter, r *http.Request) {
		path = r.Method + " " + r.URL.Path
		json.NewDecoder(r.Body).Decode(&body)
		fmt.Fprint(w, `{"approval":{"id":3,"env":"shop/dev","component":"web","status":"approved","decidedBy":"root"},"runId":"r-1"}`)
	})
	d, err := c.Decide(context.Background(), "shop/dev", "web", true, "abc", "ok")
	if err != nil {
		t.Fatal(err)
	}
	if path != "POST /api/v1/environments/shop/dev/components/web/approve" || body["planChecksum"] != "abc" || body["reason"] != "ok" {
		t.Errorf("%s %v", path, body)
	}
	if d.RunID != "r-1" || d.Approval.ID != 3 || d.Approval.DecidedBy != "root" {
		t.Errorf("decision %+v", d)
	}
}

func TestEnvironmentsAreNamedTeamSlashEnv(t *testing.T) {
	c := newTestClient(t, func(w http.ResponseWriter, r *http.Request) { t.Errorf("unexpected request %s", r.URL) })
	if _, err := c.Environment(context.Background(), "dev"); err == nil || !strings.Contains(err.Error(), "team/env") {
		t.Errorf("error %v", err)
	}
}

func sse(w io.Writer, evs ...engine.Event) {
	for _, ev := range evs {
		data, _ := json.Marshal(ev)
		fmt.Fprintf(w, "id: %d\nevent: %s\ndata: %s\n\n", ev.Seq, ev.Kind, data)
	}
}

// A stream that breaks mid-run is resumed with Last-Event-ID: every event
// arrives once, in order, until the run's end.
func TestFollowResumesWithLastEventID(t *testing.T) {
	var calls atomic.Int32
	var lastIDs []string
	c := newTestClient(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/api/v1/runs/r-1/events" {
			t.Errorf("path %s", r.URL.Path)
		}
		lastIDs = append(lastIDs, r.Header.Get("Last-Event-ID"))
		w.Header().Set("Content-Type", "text/event-stream")
		switch calls.Add(1) {
		case 1:
			sse(w, engine.Event{Seq: 1, Kind: engine.RunStarted}, engine.Event{Seq: 2, Kind: engine.ComponentStatus, Component: "net", Status: engine.Planning})
			io.WriteString(w, ": keep-alive\n\nid: 3\ndata: {\"seq\":3,") // broken mid-event
		case 2:
			sse(w, engine.Event{Seq: 2, Kind: engine.ComponentStatus, Component: "net", Status: engine.Planning}, // a repeat
				engine.Event{Seq: 3, Kind: engine.ComponentStatus, Component: "net", Status: engine.Applied},
				engine.Event{Seq: 4, Kind: engine.RunFinished, RunStatus: "succeeded"},
				engine.Event{Seq: 5, Kind: engine.LogLine, Line: "after the end"})
		default:
			t.Error("reconnected after the run finished")
		}
	})
	var seqs []int64
	if err := c.Follow(context.Background(), "r-1", func(ev engine.Event) { seqs = append(seqs, ev.Seq) }); err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(seqs) != "[1 2 3 4]" {
		t.Errorf("events %v, want [1 2 3 4]", seqs)
	}
	if fmt.Sprint(lastIDs) != "[ 2]" {
		t.Errorf("Last-Event-ID headers %q, want none then 2", lastIDs)
	}
}

func TestFollowGivesUpOnAStreamThatKeepsBreaking(t *testing.T) {
	c := newTestClient(t, func(w http.ResponseWriter, r *http.Request) { w.Header().Set("Content-Type", "text/event-stream") })
	err := c.Follow(context.Background(), "r-1", func(engine.Event) {})
	if err == nil || !strings.Contains(err.Error(), "broke") {
		t.Errorf("error %v", err)
	}
}

func TestFollowStopsAtAnHTTPError(t *testing.T) {
	var calls atomic.Int32
	c := newTestClient(t, func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		w.WriteHeader(404)
		io.WriteString(w, `{"error":{"code":"not_found","message":"run r-1: not found"}}`)
	})
	err := c.Follow(context.Background(), "r-1", func(engine.Event) {})
	if !errors.Is(err, ErrNotFound) || calls.Load() != 1 {
		t.Errorf("error %v after %d calls", err, calls.Load())
	}
}

func TestReadEventsJoinsDataLines(t *testing.T) {
	in := "retry: 10\nid: 7\nevent: log\ndata: a\ndata: b\n\n"
	var got string
	readEvents(strings.NewReader(in), func(id int64, data []byte) bool { got = fmt.Sprint(id, " ", string(data)); return true })
	if got != "7 a\nb" {
		t.Errorf("got %q", got)
	}
}
