package client

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"knit.dev/knit/internal/progress"
)

// maxReconnects is how many times in a row Follow reconnects to a stream
// that broke without delivering anything new.
const maxReconnects = 5

// Follow reads a run's events (GET /runs/{id}/events) and hands each to
// fn, in order, until the run finishes (fn has seen its RunFinished event)
// or ctx ends. A stream that breaks is resumed with Last-Event-ID, so fn
// sees every event the server still had once; a reader that fell behind
// the server's live buffer gets a Dropped event counting what it missed,
// then the events that follow. An answer other than 2xx ends it with an *Error.
func (c *Client) Follow(ctx context.Context, runID string, fn func(progress.Event)) error {
	var last int64
	failures := 0
	for {
		finished, progressed, err := c.stream(ctx, runID, &last, fn)
		switch {
		case finished:
			return nil
		case ctx.Err() != nil:
			return ctx.Err()
		case errors.As(err, new(*Error)):
			return err
		}
		if progressed {
			failures = 0
		}
		if failures++; failures > maxReconnects {
			if err == nil {
				err = io.ErrUnexpectedEOF
			}
			return fmt.Errorf("events of run %s: the stream broke %d times: %w", runID, maxReconnects, err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(c.retryWait):
		}
	}
}

// stream reads one connection's events after *last, moving *last on.
func (c *Client) stream(ctx context.Context, runID string, last *int64, fn func(progress.Event)) (finished, progressed bool, err error) {
	path := "/runs/" + url.PathEscape(runID) + "/events"
	req, err := c.request(ctx, "GET", path, nil, nil)
	if err != nil {
		return false, false, err
	}
	req.Header.Set("Accept", "text/event-stream")
	if *last > 0 {
		req.Header.Set("Last-Event-ID", strconv.FormatInt(*last, 10))
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return false, false, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return false, false, c.errorFrom(resp, "GET", path)
	}
	err = readEvents(resp.Body, func(id int64, data []byte) bool {
		var ev progress.Event
		if json.Unmarshal(data, &ev) != nil {
			return true // not an event of ours: skip it
		}
		if id > 0 {
			if id <= *last {
				return true // already seen before a reconnect
			}
			*last = id
		}
		progressed = true
		fn(ev)
		finished = ev.Kind == progress.RunFinished
		return !finished
	})
	return finished, progressed, err
}

// readEvents parses a text/event-stream body and calls fn with each
// event's id (0 if none) and data, until fn returns false or the body ends.
// Comments (keep-alives) are skipped.
func readEvents(r io.Reader, fn func(id int64, data []byte) bool) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 16<<20)
	var id int64
	var data strings.Builder
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
			if data.Len() > 0 && !fn(id, []byte(data.String())) {
				return nil
			}
			id = 0
			data.Reset()
		case strings.HasPrefix(line, ":"):
		default:
			field, value, _ := strings.Cut(line, ":")
			value = strings.TrimPrefix(value, " ")
			switch field {
			case "id":
				id, _ = strconv.ParseInt(value, 10, 64)
			case "data":
				if data.Len() > 0 {
					data.WriteByte('\n')
				}
				data.WriteString(value)
			}
		}
	}
	if err := sc.Err(); err != nil {
		return err
	}
	return io.ErrUnexpectedEOF
}
