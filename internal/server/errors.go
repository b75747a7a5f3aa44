package server

import (
	"bytes"
	"errors"
	"net/http"
	"strconv"
	"sync"

	"knit.dev/knit/internal/engine"
	"knit.dev/knit/internal/knit"
	"knit.dev/knit/internal/store"
)

// errForbidden: the token's role or teams do not allow the call (the
// library's sentinel, so both answer 403).
var errForbidden = knit.ErrForbidden

// errNotConfigured: the feature asked for is switched off on this server.
var errNotConfigured = errors.New("not configured")

// unauthenticated is a 401 that says what was missing in its own words
// (a webhook has a signature, not a token).
type unauthenticated struct{ msg string }

func (u *unauthenticated) Error() string { return u.msg }
func (u *unauthenticated) Unwrap() error { return knit.ErrUnauthenticated }

// badRequest marks a client mistake in the request itself.
type badRequest struct{ msg string }

func (b *badRequest) Error() string { return b.msg }

func badReq(msg string) error { return &badRequest{msg} }

// apiError is every error response's body.
type apiError struct {
	Error struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// status maps an error to its HTTP status and code: the one place that does.
func status(err error) (int, string) {
	var br *badRequest
	switch {
	case errors.As(err, &br), errors.Is(err, knit.ErrChecksumRequired):
		return http.StatusBadRequest, "bad_request"
	case errors.Is(err, knit.ErrUnauthenticated):
		return http.StatusUnauthorized, "unauthenticated"
	case errors.Is(err, errForbidden), errors.Is(err, knit.ErrSelfApproval):
		return http.StatusForbidden, "forbidden"
	case errors.Is(err, store.ErrNotFound), errors.Is(err, engine.ErrNoRun), errors.Is(err, errNotConfigured):
		return http.StatusNotFound, "not_found"
	case errors.Is(err, knit.ErrChecksumMismatch), errors.Is(err, engine.ErrStale):
		return http.StatusConflict, "stale_plan"
	case errors.Is(err, engine.ErrLocked):
		return http.StatusConflict, "locked"
	case errors.Is(err, engine.ErrNothingToApprove), errors.Is(err, store.ErrConflict):
		return http.StatusConflict, "conflict"
	}
	return http.StatusInternalServerError, "internal"
}

func (s *Server) fail(w http.ResponseWriter, r *http.Request, err error) {
	code, name := status(err)
	if code == http.StatusInternalServerError {
		s.log.Error("request failed", "method", r.Method, "path", r.URL.Path, "err", err)
	}
	var body apiError
	body.Error.Code, body.Error.Message = name, err.Error()
	writeJSON(w, code, body)
}

// writeJSON answers v as JSON with a Content-Length: the body is encoded
// into a pooled buffer first, so a large page goes out in one write rather
// than in chunks.
func writeJSON(w http.ResponseWriter, code int, v any) {
	buf := jsonBufs.Get().(*bytes.Buffer)
	defer func() {
		if buf.Cap() <= maxPooledJSON {
			buf.Reset()
			jsonBufs.Put(buf)
		}
	}()
	if err := encodeInto(buf, v); err != nil {
		http.Error(w, "encode the response: "+err.Error(), http.StatusInternalServerError)
		return
	}
	writeBody(w, code, buf.Bytes())
}

// writeBody sends body, JSON already encoded.
func writeBody(w http.ResponseWriter, code int, body []byte) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(code)
	_, _ = w.Write(body)
}

// jsonBufs are writeJSON's buffers; one bigger than maxPooledJSON (a
// rare huge page) is left to the garbage collector.
var jsonBufs = sync.Pool{New: func() any { return new(bytes.Buffer) }}

const maxPooledJSON = 1 << 20
