package engine

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"strings"
	"sync/atomic"

	"knit.dev/knit/internal/store"
)

// ErrNoRun means no run with that ID is known to this engine.
var ErrNoRun = errors.New("no such run")

// ErrCanceled is the cause of a run cancelled by Cancel.
var ErrCanceled = errors.New("cancelled")

// Run is a handle on one run: its ID is known as soon as Start returns,
// while the run goes on in the background. It is safe for concurrent use.
type Run struct {
	ID   string
	Env  string
	Kind store.RunKind

	log    *eventLog
	ctx    context.Context // the run's own: cancelled by Cancel, a panic, a lost lock
	cancel context.CancelCauseFunc
	done   chan struct{}
	result *Result
	err    error
	// verifying is set while an apply runs its health checks.
	verifying atomic.Bool
}

// Status is where the live run stands: store.StatusVerifying while an
// apply runs its health checks, store.StatusRunning before; after the
// end, its outcome. (The run's record says running until the outcome.)
func (r *Run) Status() store.RunStatus {
	select {
	case <-r.done:
		if r.result != nil {
			return r.result.Status
		}
		return store.StatusFailed
	default:
	}
	if r.verifying.Load() {
		return store.StatusVerifying
	}
	return store.StatusRunning
}

// Done is closed when the run has finished and everything about it is recorded.
func (r *Run) Done() <-chan struct{} { return r.done }

// Wait blocks until the run finishes (or ctx ends) and returns its result.
// The error is for the run as a whole (a store write failed, the lock was
// lost, a panic); component failures are in the result.
func (r *Run) Wait(ctx context.Context) (*Result, error) {
	select {
	case <-r.done:
		return r.result, r.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// Cancel interrupts the run: running tools get a graceful interrupt, and
// the run is recorded interrupted. It returns at once; Wait for the end.
func (r *Run) Cancel() { r.cancel(ErrCanceled) }

// Subscribe reads the run's events from the first one after seq (0: all of
// them): what the run has recorded so far, then live events, in order.
func (r *Run) Subscribe(after int64) *Subscription { return r.log.subscribe(after) }

// PanicError is a panic caught in a run, kept with its stack.
type PanicError struct {
	Where string
	Value any
	Stack []byte
}

func (p *PanicError) Error() string {
	return fmt.Sprintf("panic in %s: %v", p.Where, p.Value)
}

func recovered(where string, v any) *PanicError {
	return &PanicError{Where: where, Value: v, Stack: debug.Stack()}
}

// observe feeds fn every event of the run from a goroutine of its own. A
// panic in fn cancels the run with the panic as its cause; the rest of the
// events are then drained without calling fn. The returned channel is
// closed once fn has seen the last event.
func (r *Run) observe(fn func(Event)) <-chan struct{} {
	sub := r.Subscribe(0)
	done := make(chan struct{})
	go func() {
		defer close(done)
		alive := true
		for {
			ev, ok := sub.Next(context.Background())
			if !ok {
				return
			}
			if alive {
				alive = callObserver(fn, ev, r.cancel)
			}
		}
	}()
	return done
}

func callObserver(fn func(Event), ev Event, cancel context.CancelCauseFunc) (ok bool) {
	defer func() {
		if p := recover(); p != nil {
			cancel(recovered("event subscriber", p))
			ok = false
		}
	}()
	fn(ev)
	return true
}

// register makes a run findable by ID; finished runs stay findable until
// the newest maxFinishedRuns have pushed them out.
func (e *Engine) register(r *Run) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.runs == nil {
		e.runs = map[string]*Run{}
	}
	e.runs[r.ID] = r
}

const maxFinishedRuns = 256

func (e *Engine) finished(id string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.done = append(e.done, id)
	for len(e.done) > maxFinishedRuns {
		delete(e.runs, e.done[0])
		e.done = e.done[1:]
	}
}

// Lookup returns a running or recently finished run of this engine.
func (e *Engine) Lookup(id string) (*Run, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	r, ok := e.runs[id]
	return r, ok
}

// Cancel interrupts the run with that ID, from any goroutine.
func (e *Engine) Cancel(id string) error {
	r, ok := e.Lookup(id)
	if !ok {
		return fmt.Errorf("%w %q in this process", ErrNoRun, id)
	}
	r.Cancel()
	return nil
}

// runFailure says why a cancelled run failed rather than being interrupted
// by a person: a panic or a lost lock is a failure with its message.
func runFailure(ctx context.Context) error {
	cause := context.Cause(ctx)
	var pe *PanicError
	if errors.As(cause, &pe) || errors.Is(cause, store.ErrLockLost) {
		return cause
	}
	return nil
}

// joinErrs is errors.Join that keeps the message on one line per error.
func joinErrs(errs []error) error {
	var kept []error
	for _, e := range errs {
		if e != nil {
			kept = append(kept, e)
		}
	}
	switch len(kept) {
	case 0:
		return nil
	case 1:
		return kept[0]
	}
	msgs := make([]string, len(kept))
	for i, e := range kept {
		msgs[i] = e.Error()
	}
	return fmt.Errorf("%w (and: %s)", kept[0], strings.Join(msgs[1:], "; "))
}
