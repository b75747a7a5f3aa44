package tfstate

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strconv"
	"time"

	"knit.dev/knit/internal/store"
)

// header reads the serial and lineage a state the tool writes declares.
// OpenTofu keeps both in clear in an encrypted state too, beside the
// ciphertext, so the server reads them without the key.
func header(data []byte) (store.TFHeader, error) {
	var h struct {
		Serial  *int64 `json:"serial"`
		Lineage string `json:"lineage"`
	}
	if err := json.Unmarshal(data, &h); err != nil {
		return store.TFHeader{}, fmt.Errorf("the state is not a JSON document: %v", err)
	}
	if h.Serial == nil {
		return store.TFHeader{}, errors.New("the state has no serial")
	}
	return store.TFHeader{Serial: *h.Serial, Lineage: h.Lineage}, nil
}

// defaultLease is the run lease the server sizes its retries to when Lease
// is zero (the engine's default).
const defaultLease = 60 * time.Second

func (s *Server) lease() time.Duration {
	if s.Lease > 0 {
		return s.Lease
	}
	return defaultLease
}

// Retry pauses of the server's own retries of a failing store call.
const (
	firstPause = 100 * time.Millisecond
	maxPause   = 2 * time.Second
)

// retry calls fn until it succeeds, is refused (a refusal is an answer:
// the fence, a lock, a conflict, no state), ctx ends, or half the lease
// has passed, pausing longer each time (bounded backoff): a store that is
// unreachable for less than that (a database restart, a failover) costs
// the tool a wait, not its state. The tool's own retries (retryEnv) cover
// the other half. Each attempt is fenced again: a run that lost its lease
// meanwhile writes nothing.
func (s *Server) retry(ctx context.Context, fn func() error) error {
	deadline := time.Now().Add(s.lease() / 2)
	pause := firstPause
	for {
		err := fn()
		if err == nil || refusal(err) || ctx.Err() != nil || time.Now().Add(pause).After(deadline) {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(pause):
		}
		pause = min(2*pause, maxPause)
	}
}

// refusal reports whether err is the store's answer rather than its failure.
func refusal(err error) bool {
	var locked *store.TFLockedError
	return errors.Is(err, store.ErrLockLost) || errors.Is(err, store.ErrTFStateConflict) ||
		errors.Is(err, store.ErrNotFound) || errors.As(err, &locked)
}

// retryEnv sizes the tool's retries of a failing request (OpenTofu's
// http backend: exponential waits from TF_HTTP_RETRY_WAIT_MIN up to
// TF_HTTP_RETRY_WAIT_MAX seconds, TF_HTTP_RETRY_MAX times, on a
// connection error or a 5xx) so that together they last about the lease.
func (s *Server) retryEnv() map[string]string {
	lease := int(s.lease() / time.Second)
	waitMax := min(max(lease/10, 1), 30)
	n, total := 0, 0
	for wait := 1; total < lease; n++ {
		total += wait
		wait = min(2*wait, waitMax)
	}
	return map[string]string{
		"TF_HTTP_RETRY_MAX":      strconv.Itoa(max(n, 2)),
		"TF_HTTP_RETRY_WAIT_MIN": "1",
		"TF_HTTP_RETRY_WAIT_MAX": strconv.Itoa(waitMax),
	}
}

// Push writes data, a state file the tool could not write itself
// (errored.tfstate), as key's state for run, as the tool would: under a
// state lock of its own, fenced like any write (run must hold the
// environment's lock; the serial may not move back nor the lineage
// change). stale reports a refusal because the store holds a newer or
// unrelated state, which then stands.
func (s *Server) Push(ctx context.Context, key, run string, data []byte) (stale bool, err error) {
	h, err := header(data)
	if err != nil {
		return false, fmt.Errorf("push the state of %s: %w", key, err)
	}
	id := "knit-push-" + s.password(key, run+"\x00push", true)[:16]
	info, _ := json.Marshal(map[string]string{"ID": id, "Operation": "knit-push-errored-state", "Who": "knit@" + s.Host})
	l := store.TFLock{ID: id, Info: info, Host: s.Host, PID: os.Getpid(), Run: run}
	if err := s.retry(ctx, func() error { return s.states.LockTFState(ctx, key, l, s.deadHolder) }); err != nil {
		return false, fmt.Errorf("lock the state of %s to push it: %w", key, err)
	}
	w := store.TFWrite{Run: run, LockID: id, Serial: h.Serial, Lineage: h.Lineage}
	err = s.retry(ctx, func() error { return s.states.PutTFState(ctx, key, data, w) })
	if uerr := s.retry(ctx, func() error { return s.states.UnlockTFState(ctx, key, id) }); err == nil && uerr != nil {
		err = fmt.Errorf("unlock the state of %s after the push: %w", key, uerr)
	}
	if errors.Is(err, store.ErrTFStateConflict) {
		return true, err
	}
	return false, err
}
