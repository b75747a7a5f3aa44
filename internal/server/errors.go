package server

import (
	"bytes"
	"net/http"
	"strconv"
	"sync"

	"knit.dev/knit/internal/httperr"
	"knit.dev/knit/internal/knit"
	"knit.dev/knit/internal/words"
)

// errForbidden: the token's role or teams do not allow the call (the
// library's sentinel, so both answer 403).
var errForbidden = knit.ErrForbidden

// errNotConfigured: the feature asked for is switched off on this server.
var errNotConfigured = httperr.ErrNotConfigured

// unauthenticated is a 401 that says what was missing in its own words
// (a webhook has a signature, not a token).
type unauthenticated struct{ msg string }

func (u *unauthenticated) Error() string { return u.msg }
func (u *unauthenticated) Unwrap() error { return knit.ErrUnauthenticated }

// badRequest marks a client mistake in the request itself.
type badRequest struct{ msg string }

func (b *badRequest) Error() string { return b.msg }
func (b *badRequest) Unwrap() error { return httperr.ErrBadRequest }

func badReq(msg string) error { return &badRequest{msg} }

// apiError is every error response's body.
type apiError struct {
	Error struct {
		Code    words.ErrorCode `json:"code"`
		Message string          `json:"message"`
	} `json:"error"`
}

// fail answers err with the status and code httperr maps it to (the one
// mapping the dashboard shares).
func (s *Server) fail(w http.ResponseWriter, r *http.Request, err error) {
	code, name := httperr.Status(err)
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
