// Package httperr maps the library's errors to HTTP statuses: the one
// mapping the API (internal/server) and the dashboard (internal/web) share,
// so that an error answers the same status on both.
package httperr

import (
	"errors"
	"net/http"

	"knit.dev/knit/internal/engine"
	"knit.dev/knit/internal/knit"
	"knit.dev/knit/internal/store"
	"knit.dev/knit/internal/words"
)

var (
	// ErrBadRequest marks a client's mistake in the request itself.
	ErrBadRequest = errors.New("bad request")
	// ErrNotConfigured: the feature asked for is switched off on this server.
	ErrNotConfigured = errors.New("not configured")
)

// Status is err's HTTP status and the API's machine-readable code for it;
// an error it does not know is a 500 ("internal").
func Status(err error) (int, words.ErrorCode) {
	switch {
	case errors.Is(err, ErrBadRequest), errors.Is(err, knit.ErrChecksumRequired):
		return http.StatusBadRequest, words.CodeBadRequest
	case errors.Is(err, knit.ErrUnauthenticated):
		return http.StatusUnauthorized, words.CodeUnauthenticated
	case errors.Is(err, knit.ErrForbidden), errors.Is(err, knit.ErrSelfApproval):
		return http.StatusForbidden, words.CodeForbidden
	case errors.Is(err, store.ErrNotFound), errors.Is(err, engine.ErrNoRun), errors.Is(err, ErrNotConfigured):
		return http.StatusNotFound, words.CodeNotFound
	case errors.Is(err, knit.ErrChecksumMismatch), errors.Is(err, engine.ErrStale):
		return http.StatusConflict, words.CodeStalePlan
	case errors.Is(err, engine.ErrLocked):
		return http.StatusConflict, words.CodeLocked
	case errors.Is(err, engine.ErrNothingToApprove), errors.Is(err, store.ErrConflict), errors.Is(err, knit.ErrNoGoodRevision), errors.Is(err, knit.ErrNotPaused):
		return http.StatusConflict, words.CodeConflict
	}
	return http.StatusInternalServerError, words.CodeInternal
}
