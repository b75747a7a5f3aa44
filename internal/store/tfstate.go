package store

import (
	"context"
	"errors"
	"fmt"
	"strings"
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

// TFWrite is a write (or delete) of a state through a grant. Run is the
// knit run the grant was made for: the write is refused with ErrLockLost
// unless Run holds the lock of the key's environment (TFEnv) at the moment
// of the write. LockID is the state lock the writer holds (the tool sends
// it as ?ID=): a write needs the state locked, by LockID. Serial and
// Lineage are the written state's (TFHeader; 0 and "" when unknown): a
// write may not move the stored serial back nor change a known lineage.
type TFWrite struct {
	Run     string
	LockID  string
	Serial  int64
	Lineage string
}

// ErrTFStateConflict is a write refused because it would move a state's
// serial back or change its lineage (a replayed or late write of an older
// state). Nothing changes.
var ErrTFStateConflict = errors.New("the write would replace a newer state")

// TFEnv is the environment whose lock fences key: keys are ENV/COMPONENT,
// and ENV is everything before the last slash.
func TFEnv(key string) string {
	i := strings.LastIndexByte(key, '/')
	if i < 0 {
		return ""
	}
	return key[:i]
}

// TFStates keeps Terraform state and saved plans in the store, so that
// every replica on one database reaches them (knit's HTTP backend serves
// the state to the tool). The store seals state and plan bytes before
// they reach the database: neither it nor a dump holds them in clear.
// Keys are ENV/COMPONENT (knit uses TEAM/ENV/COMPONENT): every access
// through a grant is fenced by ENV's lock, inside the access's own
// transaction.
type TFStates interface {
	// TFState returns key's state and its lock (a zero TFLock: unlocked),
	// unfenced: for knit itself, never for a grant.
	// A key with no state is ErrNotFound, even while it is locked.
	TFState(ctx context.Context, key string) ([]byte, TFLock, error)
	// ReadTFState returns key's state for a grant of run: ErrLockLost
	// unless run holds the lock of key's environment (checked in the same
	// transaction as the read); ErrNotFound when there is no state.
	ReadTFState(ctx context.Context, key, run string) ([]byte, error)
	// PutTFState replaces key's state with data, in one transaction with
	// its checks (TFWrite): w.Run must hold the environment's lock
	// (ErrLockLost), the state must be locked by w.LockID
	// (*TFLockedError naming the holder, or with an empty holder when
	// unlocked), and w's serial and lineage may not undo the stored ones
	// (ErrTFStateConflict). A refusal changes nothing.
	PutTFState(ctx context.Context, key string, data []byte, w TFWrite) error
	// ImportTFState stores data as key's state only when key has neither
	// state nor lock, and reports whether it did: the one-time move of a
	// work dir's local state into the store never overwrites newer state.
	ImportTFState(ctx context.Context, key string, data []byte) (bool, error)
	// DeleteTFState removes key's state, fenced like PutTFState (its
	// serial and lineage are not looked at); a key with no state is not an
	// error.
	DeleteTFState(ctx context.Context, key string, w TFWrite) error
	// LockTFState takes key's lock for l. A lock held by another ID is
	// *TFLockedError naming it, unless it is stale: its Run no longer holds
	// the lock of key's environment (that lock was taken over, which a
	// lease allows only once its holder's lease and tool grace are over,
	// or released: its run is over, wherever it ran), or dead (may be nil;
	// called inside the store's transaction) reports its holder gone. Then
	// l takes it over. A lock for an l.Run that does not hold the
	// environment's lock is refused with ErrLockLost (a run that lost its
	// lease takes no state). The holder locking again succeeds. All of it
	// is one transaction with the check of the environment's lock.
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

// TFHeader is the serial and lineage a state stored for key declares.
type TFHeader struct {
	Serial  int64
	Lineage string
}

// CheckTFFence refuses an access through a grant of run unless holds
// reports (inside the store's transaction) that run holds the lock of
// key's environment.
func CheckTFFence(key, run string, holds func(env, run string) (bool, error)) error {
	if run == "" {
		return fmt.Errorf("terraform state %s: a grant with no run: %w", key, ErrLockLost)
	}
	ok, err := holds(TFEnv(key), run)
	if err != nil {
		return err
	}
	if !ok {
		return fmt.Errorf("terraform state %s: run %s no longer holds the lock of %s: %w", key, run, TFEnv(key), ErrLockLost)
	}
	return nil
}

// CheckTFWrite decides a write of key's state by w while held holds its
// lock and cur is the stored state's header (see TFStates.PutTFState; the
// fence is CheckTFFence's). data false: a delete, whose header is not
// compared.
func CheckTFWrite(key string, held TFLock, cur TFHeader, w TFWrite, data bool) error {
	if held.ID == "" || held.ID != w.LockID {
		return &TFLockedError{Key: key, Holder: held}
	}
	if !data {
		return nil
	}
	if cur.Lineage != "" && w.Lineage != cur.Lineage {
		return fmt.Errorf("terraform state %s: lineage %q is not the state's %q: %w", key, w.Lineage, cur.Lineage, ErrTFStateConflict)
	}
	if w.Serial < cur.Serial {
		return fmt.Errorf("terraform state %s: serial %d is older than the state's %d: %w", key, w.Serial, cur.Serial, ErrTFStateConflict)
	}
	return nil
}

// CheckTFLock decides a lock of key for l while held holds it (see
// TFStates.LockTFState); holds reports, inside the store's transaction,
// whether a run holds an environment's lock.
func CheckTFLock(key string, held, l TFLock, holds func(env, run string) (bool, error), dead func(TFLock) bool) error {
	env := TFEnv(key)
	if l.Run != "" {
		ok, err := holds(env, l.Run)
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
		ok, err := holds(env, held.Run)
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
