package storetest

import (
	"errors"
	"testing"
	"time"

	"knit.dev/knit/internal/store"
)

func testExpiries(t *testing.T, s store.Store) {
	ctx := t.Context()
	_, err := s.Expiry(ctx, "team/pr-1")
	wantNotFound(t, err, "expiry never set")

	must(t, s.SetExpiry(ctx, "team/pr-1", at(time.Hour), nil))
	must(t, s.SetExpiry(ctx, "team/pr-2", at(2*time.Hour), nil))
	e, err := s.Expiry(ctx, "team/pr-1")
	must(t, err)
	equal(t, "expiry", e, store.Expiry{Env: "team/pr-1", At: at(time.Hour)})

	// The warning is for one expiry: a stale one conflicts.
	if err := s.MarkExpiryWarned(ctx, "team/pr-1", at(time.Minute)); !errors.Is(err, store.ErrConflict) {
		t.Errorf("warned for another expiry: err = %v, want store.ErrConflict", err)
	}
	must(t, s.MarkExpiryWarned(ctx, "team/pr-1", at(time.Hour)))
	all, err := s.Expiries(ctx)
	must(t, err)
	equal(t, "expiries", all, []store.Expiry{
		{Env: "team/pr-1", At: at(time.Hour), WarnedFor: at(time.Hour)},
		{Env: "team/pr-2", At: at(2 * time.Hour)},
	})

	// An extension is a new expiry, not yet warned for, audited with it.
	audit := &store.AuditEvent{Env: "team/pr-1", Actor: "alice", Action: "ttl-extend", Detail: "expires at x", Time: at(5)}
	must(t, s.SetExpiry(ctx, "team/pr-1", at(3*time.Hour), audit))
	e, err = s.Expiry(ctx, "team/pr-1")
	must(t, err)
	equal(t, "extended", e, store.Expiry{Env: "team/pr-1", At: at(3 * time.Hour), WarnedFor: at(time.Hour)})
	evs, err := s.Audit(ctx, store.AuditFilter{Env: "team/pr-1"})
	must(t, err)
	if len(evs) != 1 || evs[0].Action != "ttl-extend" || evs[0].Actor != "alice" {
		t.Errorf("audit = %+v, want one ttl-extend by alice", evs)
	}

	must(t, s.SetExpiry(ctx, "team/pr-1", time.Time{}, nil))
	_, err = s.Expiry(ctx, "team/pr-1")
	wantNotFound(t, err, "cleared expiry")
	if err := s.MarkExpiryWarned(ctx, "team/pr-1", at(3*time.Hour)); !errors.Is(err, store.ErrConflict) {
		t.Errorf("warned for a cleared expiry: err = %v, want store.ErrConflict", err)
	}
}
