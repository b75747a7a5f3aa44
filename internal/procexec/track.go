package procexec

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Group is a tool's process group as a later knit finds it again: its ID
// (the PID of the leader, the command Run started) and Start, the leader's
// identity (Identify), so that a PID the system gave to another process
// since is never taken for the tool. Start is empty where it could not be
// read.
type Group struct {
	ID    int
	Start string
}

// Tracker learns of the process group of each command Run starts under a
// context carrying it (WithTracker), so that the group can be ended by a
// later knit should this one die first (EndGroup). Its methods are called
// from the goroutine that called Run.
type Tracker interface {
	// Started is called once the command has started, before Run waits
	// for it. An error kills the group at once; Run returns the error.
	Started(g Group) error
	// Ended is called once the command has exited and, if it was
	// cancelled, once nothing of its group is left (or the group outlived
	// its SIGKILL: Ended is not called then, so the group stays known).
	// Background processes a command that ended by itself left in its group
	// are not waited for: they are what it meant to leave. An error is
	// joined to Run's.
	Ended(g Group) error
}

type trackerKey struct{}

// WithTracker returns a context that has Run report to t.
func WithTracker(ctx context.Context, t Tracker) context.Context {
	return context.WithValue(ctx, trackerKey{}, t)
}

func trackerOf(ctx context.Context) Tracker {
	t, _ := ctx.Value(trackerKey{}).(Tracker)
	return t
}

// ErrGroupSurvived is returned by EndGroup when a process group is still
// there after SIGKILL (a process stuck in the kernel).
var ErrGroupSurvived = errors.New("process group survived SIGKILL")

// ErrUnknownLeader is returned by EndGroup when a process with the group's
// ID runs but its identity cannot be compared with the recorded one: it
// may be the tool or a stranger that got its PID, so it is left alone.
var ErrUnknownLeader = errors.New("cannot tell whether the process is the recorded tool")

// groupPoll is how often a group is checked for having exited, so the
// SIGKILL timer stops, and waits end, as soon as nothing is left.
const groupPoll = 50 * time.Millisecond

// killWait bounds the wait for a group to disappear after SIGKILL.
const killWait = 5 * time.Second

// track tells ctx's tracker, if any, that cmd's group started, and returns
// what Run must call once the command has exited (nil: nothing).
func track(ctx context.Context, pid int, grace time.Duration) (ended func(err error) error, err error) {
	t := trackerOf(ctx)
	if t == nil {
		return nil, nil
	}
	start, _ := Identify(pid) // empty: recovery then judges by the group alone
	g := Group{ID: pid, Start: start}
	if err := t.Started(g); err != nil {
		killGroup(pid)
		return nil, fmt.Errorf("record process group %d: %w", pid, err)
	}
	return func(runErr error) error {
		// A cancelled command's group may outlive its leader until the
		// kill grace later; it stays known until it is gone.
		if ctx.Err() != nil && !waitGone(context.Background(), pid, grace+waitMargin+killWait) {
			return runErr
		}
		if err := t.Ended(g); err != nil {
			return errors.Join(runErr, fmt.Errorf("forget process group %d: %w", pid, err))
		}
		return runErr
	}, nil
}

// waitGone polls until no live process is left in group pgid, ctx ends or
// within passes; it reports whether the group is gone.
func waitGone(ctx context.Context, pgid int, within time.Duration) bool {
	deadline := time.NewTimer(within)
	defer deadline.Stop()
	tick := time.NewTicker(groupPoll)
	defer tick.Stop()
	for groupLive(pgid) {
		select {
		case <-ctx.Done():
			return false
		case <-deadline.C:
			return !groupLive(pgid)
		case <-tick.C:
		}
	}
	return true
}
