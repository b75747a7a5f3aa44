package notify

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"time"
)

// deliver sends one event to one sink, retrying network errors, 429 and 5xx
// responses with exponential backoff up to MaxAttempts. Other non-2xx
// responses are not retried. A delivery given up is logged and counts as
// done. Once Close has begun, a failed attempt is the last: deliver then
// returns false (the event is kept or abandoned), as it does when Close's
// flush is over.
func (d *Dispatcher) deliver(s Sink, it item) bool {
	body, err := encode(s, it)
	if err != nil {
		d.log.Error("notify: cannot encode event", "sink", s.Name, "env", it.ev.Env, "seq", it.seq, "error", err)
		return true
	}
	for attempt := 1; ; attempt++ {
		last := d.isClosing()
		status, err := d.post(s, it.ev.Kind, body)
		if err == nil && status >= 200 && status < 300 {
			return true
		}
		if d.ctx.Err() != nil {
			return false
		}
		retry := err != nil || status == http.StatusTooManyRequests || status >= 500
		attrs := []any{"sink", s.Name, "host", safeHost(s.URL), "env", it.ev.Env, "kind", it.ev.Kind,
			"seq", it.seq, "attempt", attempt}
		if err != nil {
			attrs = append(attrs, "error", safeErr(err))
		} else {
			attrs = append(attrs, "status", status)
		}
		if !retry || attempt >= d.opts.MaxAttempts {
			d.log.Error("notify: giving up on event", attrs...)
			return true
		}
		if last {
			d.log.Warn("notify: delivery failed while closing", attrs...)
			return false
		}
		wait := d.backoff(attempt)
		d.log.Warn("notify: delivery failed, will retry", append(attrs, "wait", wait)...)
		if !d.sleep(wait) {
			return false
		}
	}
}

// encode renders the request body for the sink's kind, leaving <, > and &
// unescaped so bodies read as they are.
func encode(s Sink, it item) ([]byte, error) {
	var v any = newWebhookBody(s.Name, it.seq, it.ev)
	if s.Kind == SinkSlack {
		v = newSlackMessage(it.ev)
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}

// errNoAnswer cancels an attempt that ran out of AttemptTimeout.
var errNoAnswer = errors.New("no answer in time")

// post makes one attempt and returns the response status.
func (d *Dispatcher) post(s Sink, kind Kind, body []byte) (int, error) {
	ctx, cancel := context.WithCancelCause(d.ctx)
	defer cancel(nil)
	stop := d.opts.AfterFunc(d.opts.AttemptTimeout, func() { cancel(errNoAnswer) })
	defer stop()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.URL, bytes.NewReader(body))
	if err != nil {
		return 0, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "knit-notify")
	req.Header.Set(EventHeader, string(kind))
	if s.Secret != "" {
		req.Header.Set(SignatureHeader, Sign(s.Secret, body))
	}
	resp, err := d.opts.Client.Do(req)
	if err != nil {
		if errors.Is(context.Cause(ctx), errNoAnswer) {
			return 0, fmt.Errorf("no answer within %v", d.opts.AttemptTimeout)
		}
		return 0, err
	}
	defer resp.Body.Close()
	// Drain a little so the connection can be reused.
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	return resp.StatusCode, nil
}

// Sign returns the SignatureHeader value for body: "sha256=" and the hex
// HMAC-SHA256 of body keyed with secret. Receivers compute the same over
// the raw body and compare with hmac.Equal.
func Sign(secret string, body []byte) string {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write(body)
	return "sha256=" + hex.EncodeToString(m.Sum(nil))
}

// backoff is the wait after the given failed attempt: Backoff doubled per
// earlier failure, capped at MaxBackoff.
func (d *Dispatcher) backoff(attempt int) time.Duration {
	wait := d.opts.Backoff
	for i := 1; i < attempt && wait < d.opts.MaxBackoff; i++ {
		wait *= 2
	}
	return min(wait, d.opts.MaxBackoff)
}

// sleep waits for wait and returns true, or false early if Close's flush
// is over. Close cuts it short (true): the flush makes its attempt at once.
func (d *Dispatcher) sleep(wait time.Duration) bool {
	waited := make(chan struct{})
	stop := d.opts.AfterFunc(wait, func() { close(waited) })
	defer stop()
	select {
	case <-waited:
		return true
	case <-d.closing:
		return d.ctx.Err() == nil
	case <-d.ctx.Done():
		return false
	}
}

// safeErr describes a request error without the URL that *url.Error
// carries, which may hold a token in its path or query.
func safeErr(err error) string {
	var ue *url.Error
	if errors.As(err, &ue) {
		return fmt.Sprintf("%s: %v", ue.Op, ue.Err)
	}
	return err.Error()
}
