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
	_, err = s.PutRevision(ctx, env("team/pr-1"), rev("a", at(0)))
	must(t, err)
	// The expiry shows in the environment's view: setting, moving or
	// clearing it changes the environment's version.
	version := func() int64 {
		v, err := s.EnvironmentVersion(ctx, "team/pr-1")
		must(t, err)
		return v
	}
	v0 := version()

	must(t, s.SetExpiry(ctx, "team/pr-1", at(time.Hour), nil))
	if v := version(); v == v0 {
		t.Errorf("setting the expiry left the environment's version at %d", v)
	}
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
	v1 := version()
	must(t, s.SetExpiry(ctx, "team/pr-1", at(3*time.Hour), audit))
	if v := version(); v == v1 {
		t.Errorf("moving the expiry left the environment's version at %d", v)
	}
	e, err = s.Expiry(ctx, "team/pr-1")
	must(t, err)
	equal(t, "extended", e, store.Expiry{Env: "team/pr-1", At: at(3 * time.Hour), WarnedFor: at(time.Hour)})
	evs, err := s.Audit(ctx, store.AuditFilter{Env: "team/pr-1"})
	must(t, err)
	if len(evs) != 1 || evs[0].Action != "ttl-extend" || evs[0].Actor != "alice" {
		t.Errorf("audit = %+v, want one ttl-extend by alice", evs)
	}

	v2 := version()
	must(t, s.SetExpiry(ctx, "team/pr-1", time.Time{}, nil))
	if v := version(); v == v2 {
		t.Errorf("clearing the expiry left the environment's version at %d", v)
	}
	_, err = s.Expiry(ctx, "team/pr-1")
	wantNotFound(t, err, "cleared expiry")
	if err := s.MarkExpiryWarned(ctx, "team/pr-1", at(3*time.Hour)); !errors.Is(err, store.ErrConflict) {
		t.Errorf("warned for a cleared expiry: err = %v, want store.ErrConflict", err)
	}
}
