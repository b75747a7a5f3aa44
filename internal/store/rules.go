package store

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"knit.dev/knit/internal/words"
)

// This file holds the decisions every Store implementation makes alike,
// apart from how it reads and writes its rows.

// TakeLock decides AcquireLock: held is env's current lock (nil: none),
// now the store's clock. It returns the lock to store: the holder's own
// with its lease extended, or l's, acquired now, over a free lock, one
// whose lease ended, or one whose holder dead reports gone; a live lease of
// another run is *LockedError.
func TakeLock(held *Lock, l Lock, now time.Time, lease time.Duration, dead func(Lock) bool) (Lock, error) {
	switch {
	case held == nil: // free
	case held.RunID == l.RunID: // our own: extend the lease, keep the rest
		own := *held
		own.Expires = now.Add(lease)
		return own, nil
	case !held.Expires.After(now) || (dead != nil && dead(*held)): // take over
	default:
		return Lock{}, &LockedError{Env: l.Env, Holder: *held}
	}
	l.Acquired, l.Expires = now, now.Add(lease)
	return l, nil
}

// CheckLockRequest is the error of an AcquireLock call a store must refuse.
func CheckLockRequest(l Lock, lease time.Duration) error {
	if l.Env == "" || l.RunID == "" {
		return errors.New("acquire lock: Env and RunID are required")
	}
	if lease <= 0 {
		return fmt.Errorf("acquire lock on %s: lease %v is not positive", l.Env, lease)
	}
	return nil
}

// CheckHolder is ErrLockLost, naming the holder, if h (env's lock) belongs
// to a run other than runID: the fence on a run's writes.
func CheckHolder(h Lock, env, runID string) error {
	if h.RunID != runID {
		return fmt.Errorf("run %s: %w (run %s holds %s since %s)", runID, ErrLockLost, h.RunID, env, h.Acquired.UTC().Format(time.RFC3339))
	}
	return nil
}

// NoHolder is ErrLockLost for a run writing while no run holds env's lock.
func NoHolder(env, runID string) error {
	return fmt.Errorf("run %s: %w (no run holds %s)", runID, ErrLockLost, env)
}

// PrepareRevision checks PutRevision's arguments and fills rev's defaults:
// Env is env.ID, Hash the SHA-256 of Spec.
func PrepareRevision(env Environment, rev Revision) (Revision, error) {
	if env.ID == "" {
		return rev, errors.New("put revision: environment has no ID")
	}
	if rev.Env == "" {
		rev.Env = env.ID
	}
	if rev.Env != env.ID {
		return rev, fmt.Errorf("put revision: revision is for %s, environment is %s", rev.Env, env.ID)
	}
	if rev.Hash == "" {
		sum := sha256.Sum256(rev.Spec)
		rev.Hash = hex.EncodeToString(sum[:])
	}
	return rev, nil
}

// InterruptedError is the error recorded on a run InterruptRuns marks:
// its own, or one naming the process that vanished.
func InterruptedError(r Run) string {
	if r.Error != "" {
		return r.Error
	}
	return fmt.Sprintf("knit process %d ended before the run finished", r.PID)
}

// ApprovalStatuses are the statuses an approval (or change set) may be
// moved to.
var ApprovalStatuses = []string{ApprovalPending, ApprovalApproved, ApprovalRejected, ApprovalApplied, ApprovalStale}

// StartStatus is the status StartComponentRun records for cr: running
// (words.ComponentRunning) unless the caller records it whole.
func StartStatus(cr *ComponentRun) string {
	if cr.Status == "" {
		return string(words.ComponentRunning)
	}
	return cr.Status
}

// EncodeCause is c as a store keeps it: its JSON, or nil (NULL) when it
// says nothing.
func EncodeCause(c Cause) any {
	if c.ReasonCode == "" && len(c.Upstream) == 0 && c.ApprovalID == 0 {
		return nil
	}
	b, err := json.Marshal(c)
	if err != nil {
		return nil // a struct of strings and an int always encodes
	}
	return string(b)
}

// DecodeCause reads a value written by EncodeCause (NULL, text or bytes)
// into c.
func DecodeCause(src any, c *Cause) error {
	*c = Cause{}
	switch v := src.(type) {
	case nil:
		return nil
	case string:
		return json.Unmarshal([]byte(v), c)
	case []byte:
		return json.Unmarshal(v, c)
	}
	return fmt.Errorf("cause column holds %T", src)
}
