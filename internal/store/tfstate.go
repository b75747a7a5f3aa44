package store

import (
	"context"
	"fmt"
)

// TFLock is the holder of a Terraform state's lock, as the tool's HTTP
// backend describes it: ID is the tool's lock ID, Info the lock info JSON
// the tool sent (who, what operation, when), returned as is to a tool that
// finds the state locked.
type TFLock struct {
	ID   string `json:"id"`
	Info []byte `json:"info,omitempty"`
	// Host and PID name the knit process whose state server the tool
	// locked through: a tool reaches only its own knit's server, so once
	// that process is gone the lock can never be released by its holder.
	Host string `json:"host,omitempty"`
	PID  int    `json:"pid,omitempty"`
	// Run is the knit run the tool locked for, which held its
	// environment's lock then ("": none recorded — a lock taken outside a
	// run, or by an older knit). Once that run no longer holds its
	// environment's lock, the state lock is stale on every host.
	Run string `json:"run,omitempty"`
}

// TFLockedError is a Terraform state write, lock or unlock refused because
// another lock holds the state (Holder; an empty Holder.ID: the state is not
// locked, and the caller named a lock).
type TFLockedError struct {
	Key    string
	Holder TFLock
}

func (e *TFLockedError) Error() string {
	if e.Holder.ID == "" {
		return fmt.Sprintf("terraform state %s is not locked", e.Key)
	}
	return fmt.Sprintf("terraform state %s is locked by lock %s", e.Key, e.Holder.ID)
}

// TFStates keeps Terraform state and saved plans in the store, so that
// every replica on one database reaches them (knit's HTTP backend serves
// the state to the tool). The store seals state and plan bytes before
// they reach the database: neither it nor a dump holds them in clear.
// Keys are opaque to the store (knit uses TEAM/ENV/COMPONENT).
type TFStates interface {
	// TFState returns key's state and its lock (a zero TFLock: unlocked).
	// A key with no state is ErrNotFound, even while it is locked.
	TFState(ctx context.Context, key string) ([]byte, TFLock, error)
	// PutTFState replaces key's state with data. While key is locked only
	// its holder (lockID) may write; any other writer is refused with
	// *TFLockedError and nothing changes. An unlocked key takes any write.
	PutTFState(ctx context.Context, key string, data []byte, lockID string) error
	// ImportTFState stores data as key's state only when key has neither
	// state nor lock, and reports whether it did: the one-time move of a
	// work dir's local state into the store never overwrites newer state.
	ImportTFState(ctx context.Context, key string, data []byte) (bool, error)
	// DeleteTFState removes key's state, fenced like PutTFState; a key
	// with no state is not an error.
	DeleteTFState(ctx context.Context, key, lockID string) error
	// LockTFState takes key's lock for l. A lock held by another ID is
	// *TFLockedError naming it, unless it is stale: its Run no longer holds
	// any environment's lock (that environment's lock was taken over or
	// released: its run is over, wherever it ran), or dead (may be nil;
	// called inside the store's transaction) reports its holder gone. Then
	// l takes it over. A lock for an l.Run that holds no environment's lock
	// is refused with ErrLockLost (a run that lost its lease takes no
	// state). The holder locking again succeeds. All of it is one
	// transaction with the check of the environment locks.
	LockTFState(ctx context.Context, key string, l TFLock, dead func(holder TFLock) bool) error
	// UnlockTFState frees key's lock held by lockID. Another holder's lock
	// is *TFLockedError naming it, and stays; an unlocked key is
	// *TFLockedError with an empty holder.
	UnlockTFState(ctx context.Context, key, lockID string) error
	// CountTFStates counts the stored states (for `knit store migrate`).
	CountTFStates(ctx context.Context) (int, error)

	// SavePlan keeps the bytes of approval id's saved plan (the file the
	// tool wrote), replacing any. A plan made on one replica is applied
	// byte for byte from these on another.
	SavePlan(ctx context.Context, id int64, data []byte) error
	// SavedPlan returns approval id's saved plan bytes, or ErrNotFound
	// (none kept: an approval from before knit kept plans in the store,
	// or one already applied, rejected or stale, whose plan is dropped).
	SavedPlan(ctx context.Context, id int64) ([]byte, error)
}

// TFStateAD and PlanAD are the additional data that tie a sealed state or
// plan to its key, so that sealed bytes copied to another row do not open.
func TFStateAD(key string) []byte { return []byte("tfstate\x00" + key) }

// PlanAD: see TFStateAD.
func PlanAD(id int64) []byte { return fmt.Appendf(nil, "plan\x00%d", id) }

// CheckTFWrite decides a write (or delete) of key's state by lockID while
// held holds its lock: refused with *TFLockedError when another lock holds
// it; an unlocked state takes any write.
func CheckTFWrite(key string, held TFLock, lockID string) error {
	if held.ID != "" && held.ID != lockID {
		return &TFLockedError{Key: key, Holder: held}
	}
	return nil
}

// CheckTFLock decides a lock of key for l while held holds it (see
// TFStates.LockTFState); holds reports, inside the store's transaction,
// whether a run holds an environment's lock.
func CheckTFLock(key string, held, l TFLock, holds func(run string) (bool, error), dead func(TFLock) bool) error {
	if l.Run != "" {
		ok, err := holds(l.Run)
		if err != nil {
			return err
		}
		if !ok {
			return fmt.Errorf("lock terraform state %s for run %s: %w", key, l.Run, ErrLockLost)
		}
	}
	if held.ID == "" || held.ID == l.ID {
		return nil
	}
	if held.Run != "" && held.Run != l.Run {
		ok, err := holds(held.Run)
		if err != nil {
			return err
		}
		if !ok {
			return nil // its run is over: stale on any host
		}
	}
	if dead != nil && dead(held) {
		return nil
	}
	return &TFLockedError{Key: key, Holder: held}
}

// CheckTFUnlock decides an unlock of key by lockID while held holds it.
func CheckTFUnlock(key string, held TFLock, lockID string) error {
	if held.ID == "" || held.ID != lockID {
		return &TFLockedError{Key: key, Holder: held}
	}
	return nil
}

// FinalApproval reports whether an approval in status can never be applied
// again (its saved plan may be dropped).
func FinalApproval(status string) bool {
	return status != ApprovalPending && status != ApprovalApproved
}
