// Package client talks to a knit server's HTTP API (/api/v1): typed
// methods per endpoint that answer with the library's read models, a
// bearer token on every request, errors that say what the server refused,
// and a reader for a run's server-sent events.
package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// Client is a knit server's API. It is safe for concurrent use.
type Client struct {
	base  *url.URL
	token string
	http  *http.Client
	// retryWait is how long the event reader waits before reconnecting.
	retryWait time.Duration
}

// New returns a client of the server at baseURL (http or https, with or
// without a path prefix) that authenticates with token. hc may be nil.
func New(baseURL, token string, hc *http.Client) (*Client, error) {
	u, err := url.Parse(strings.TrimRight(baseURL, "/"))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("server %q: want an http:// or https:// URL", baseURL)
	}
	if hc == nil {
		hc = &http.Client{}
	}
	return &Client{base: u, token: token, http: hc, retryWait: time.Second}, nil
}

// Error is an answer other than 2xx: the HTTP status and the server's
// machine-readable code and message.
type Error struct {
	Status  int
	Code    string
	Message string
	// Method and Path say which call it was.
	Method, Path string
}

func (e *Error) Error() string {
	switch e.Status {
	case http.StatusUnauthorized:
		return "the server refused the token: set KNIT_TOKEN (knit token create on the server)"
	case http.StatusForbidden:
		return "the server refused: " + e.Message
	case http.StatusNotFound:
		if e.Message == "" || strings.Contains(e.Message, "404 page not found") {
			return fmt.Sprintf("the server has no %s (is it an older knit?)", e.Path)
		}
		return e.Message
	}
	if e.Message != "" {
		return e.Message
	}
	return fmt.Sprintf("%s %s: %d %s", e.Method, e.Path, e.Status, http.StatusText(e.Status))
}

// Is makes errors.Is(err, ErrNotFound) and friends work on an *Error.
func (e *Error) Is(target error) bool {
	switch target {
	case ErrNotFound:
		return e.Status == http.StatusNotFound
	case ErrConflict:
		return e.Status == http.StatusConflict
	case ErrUnauthorized:
		return e.Status == http.StatusUnauthorized
	case ErrForbidden:
		return e.Status == http.StatusForbidden
	}
	return false
}

// Sentinels an *Error matches with errors.Is, by HTTP status.
var (
	ErrNotFound     = errors.New("not found")       // 404
	ErrConflict     = errors.New("conflict")        // 409: stale plan, locked, nothing to approve
	ErrUnauthorized = errors.New("unauthenticated") // 401
	ErrForbidden    = errors.New("forbidden")       // 403
)

// do sends one request (body, if set, as JSON) and decodes a 2xx answer
// into out (if set).
func (c *Client) do(ctx context.Context, method, path string, q url.Values, body, out any) error {
	req, err := c.request(ctx, method, path, q, body)
	if err != nil {
		return err
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return fmt.Errorf("knit server %s: %w", c.base.Host, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		return c.errorFrom(resp, method, path)
	}
	if out == nil {
		return nil
	}
	if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
		return fmt.Errorf("%s %s: read the answer: %w", method, path, err)
	}
	return nil
}

func (c *Client) request(ctx context.Context, method, path string, q url.Values, body any) (*http.Request, error) {
	u := *c.base
	u.Path += "/api/v1" + path
	u.RawQuery = q.Encode()
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return nil, err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, u.String(), rd)
	if err != nil {
		return nil, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Accept", "application/json")
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	return req, nil
}

// errorFrom reads an error answer: the server's {"error":{code,message}}
// when it sent one, else the status alone.
func (c *Client) errorFrom(resp *http.Response, method, path string) error {
	e := &Error{Status: resp.StatusCode, Method: method, Path: path}
	data, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	var body struct {
		Error struct {
			Code    string `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if json.Unmarshal(data, &body) == nil {
		e.Code, e.Message = body.Error.Code, body.Error.Message
	} else {
		e.Message = strings.TrimSpace(string(data))
	}
	return e
}

// envPath is the API path of an environment ("team/env").
func envPath(id string) (string, error) {
	t, e, ok := strings.Cut(id, "/")
	if !ok || t == "" || e == "" || strings.Contains(e, "/") {
		return "", fmt.Errorf("environment %q: name it as team/env", id)
	}
	return "/environments/" + url.PathEscape(t) + "/" + url.PathEscape(e), nil
}
