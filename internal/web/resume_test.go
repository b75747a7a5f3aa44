package web_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strconv"
	"testing"
	"time"

	"knit.dev/knit/internal/adapters"
	"knit.dev/knit/internal/knit"
)

// A run page shown again from the back/forward cache reopens its stream
// with ?after= the last event it saw (it cannot set Last-Event-ID): the
// stream resumes after it, as a reconnection's does.
func TestRunStreamResumesAfterTheLastEventSeen(t *testing.T) {
	w := newWorld(t, adapters.Config{})
	w.apply("ops-web", map[string]string{"env.yaml": opsWeb})
	last, err := knit.NewRecords(w.k).LastRun(context.Background(), "ops/web")
	if err != nil || last == nil {
		t.Fatalf("last run of ops/web: %v %v", last, err)
	}
	c := w.client("viewer")
	c.Timeout = 30 * time.Second // hang guard, not a timing assertion
	ids := func(query, lastEventID string) []int {
		t.Helper()
		req, _ := http.NewRequest("GET", w.url+"/runs/"+last.ID+"/events"+query, nil)
		req.Header.Set("Accept", "text/event-stream")
		if lastEventID != "" {
			req.Header.Set("Last-Event-ID", lastEventID)
		}
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		if err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("stream %s: %s %v", query, resp.Status, err)
		}
		var out []int
		for _, m := range regexp.MustCompile(`(?m)^id: (\d+)$`).FindAllStringSubmatch(string(body), -1) {
			n, _ := strconv.Atoi(m[1])
			out = append(out, n)
		}
		return out
	}
	all := ids("", "")
	if len(all) < 3 {
		t.Fatalf("the run's stream has events %v", all)
	}
	k := all[len(all)-3]
	want := fmt.Sprint(all[len(all)-2:])
	if got := fmt.Sprint(ids(fmt.Sprintf("?after=%d", k), "")); got != want {
		t.Errorf("the stream after event %d (?after=): %s, want %s (all: %v)", k, got, want, all)
	}
	if got := fmt.Sprint(ids("?after=-5", "")); got != fmt.Sprint(all) {
		t.Errorf("the stream after event -5: %s, want every event %v", got, all)
	}
	if got := fmt.Sprint(ids("", strconv.Itoa(k))); got != want {
		t.Errorf("the stream after event %d (Last-Event-ID): %s, want %s", k, got, want)
	}
}
