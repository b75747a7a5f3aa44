package httperr_test

import (
	"errors"
	"fmt"
	"net/http"
	"testing"

	"knit.dev/knit/internal/engine"
	"knit.dev/knit/internal/httperr"
	"knit.dev/knit/internal/knit"
	"knit.dev/knit/internal/store"
	"knit.dev/knit/internal/words"
)

func TestStatus(t *testing.T) {
	for _, c := range []struct {
		err  error
		code int
		name words.ErrorCode
	}{
		{httperr.ErrBadRequest, http.StatusBadRequest, "bad_request"},
		{knit.ErrChecksumRequired, http.StatusBadRequest, "bad_request"},
		{knit.ErrUnauthenticated, http.StatusUnauthorized, "unauthenticated"},
		{knit.ErrForbidden, http.StatusForbidden, "forbidden"},
		{knit.ErrSelfApproval, http.StatusForbidden, "forbidden"},
		{store.ErrNotFound, http.StatusNotFound, "not_found"},
		{engine.ErrNoRun, http.StatusNotFound, "not_found"},
		{httperr.ErrNotConfigured, http.StatusNotFound, "not_found"},
		{knit.ErrChecksumMismatch, http.StatusConflict, "stale_plan"},
		{engine.ErrStale, http.StatusConflict, "stale_plan"},
		{engine.ErrLocked, http.StatusConflict, "locked"},
		{engine.ErrNothingToApprove, http.StatusConflict, "conflict"},
		{store.ErrConflict, http.StatusConflict, "conflict"},
		{errors.New("disk I/O error"), http.StatusInternalServerError, "internal"},
	} {
		// Errors arrive wrapped with what the caller was doing.
		err := fmt.Errorf("apply pay/prod: %w", c.err)
		if code, name := httperr.Status(err); code != c.code || name != c.name {
			t.Errorf("Status(%q) = %d %s, want %d %s", err, code, name, c.code, c.name)
		}
	}
}
