package store

import (
	"context"
	"time"
)

// Expiry is when an ephemeral environment (spec.ttl) is torn down.
type Expiry struct {
	Env string    `json:"env"`
	At  time.Time `json:"at"`
	// WarnedFor is the expiry a ttl.expiring notification went out for
	// (zero: none yet): one warning per expiry, across restarts.
	WarnedFor time.Time `json:"warnedFor,omitzero"`
}

// Expiries is the part of the Store that keeps ephemeral environments'
// expiry times.
type Expiries interface {
	// SetExpiry sets env's expiry to at (zero: clears it) and appends
	// audit when non-nil, in one transaction.
	SetExpiry(ctx context.Context, env string, at time.Time, audit *AuditEvent) error
	// Expiry is env's expiry (ErrNotFound: it has none).
	Expiry(ctx context.Context, env string) (Expiry, error)
	// Expiries lists every expiry, by environment.
	Expiries(ctx context.Context) ([]Expiry, error)
	// MarkExpiryWarned records that the warning for env's expiry at went
	// out; ErrConflict when env's expiry is no longer at (it was extended
	// or cleared meanwhile).
	MarkExpiryWarned(ctx context.Context, env string, at time.Time) error
}
