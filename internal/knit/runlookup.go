package knit

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"knit.dev/knit/internal/engine"
	"knit.dev/knit/internal/spec"
)

// QueuedRun is a run a server's queue knows by ID that may not have a
// record yet.
type QueuedRun struct {
	Env string
	Req RunRequest
	// Started, when set, is closed once the run started or could not
	// (then Err says why).
	Started <-chan struct{}
	Err     func() error
}

// Waiting reports whether the run has not started yet.
func (q QueuedRun) Waiting() bool {
	if q.Started == nil {
		return false
	}
	select {
	case <-q.Started:
		return false
	default:
		return true
	}
}

// Refused is why the run could not start (nil: it started, or waits).
func (q QueuedRun) Refused() error {
	if q.Waiting() || q.Err == nil {
		return nil
	}
	return q.Err()
}

// FoundRun is a run as FindRun found it: at least one of Live, Record
// and Queued is set.
type FoundRun struct {
	ID, Env string
	// Live is the run executing in this process.
	Live *engine.Run
	// Record is what the store has of it.
	Record *RunView
	// Queued is the server's queue's entry of it.
	Queued *QueuedRun
}

// FindRun is the one lookup of a run by ID, for the API and the
// dashboard alike: live in this process, recorded, or known to the
// server's queue (queued answers for it; nil: no queue). The caller's
// teams apply inside: a run of a team it may not see is ErrForbidden,
// whichever way it was found; a run nobody knows is ErrNotFound.
func (k *Knit) FindRun(ctx context.Context, id string, queued func(id string) (QueuedRun, bool)) (FoundRun, error) {
	f := FoundRun{ID: id}
	if queued != nil {
		if q, ok := queued(id); ok {
			f.Queued, f.Env = &q, q.Env
		}
	}
	if r, ok := k.Lookup(id); ok {
		f.Live, f.Env = r, r.Env
	}
	if f.Queued == nil || !f.Queued.Waiting() {
		rec, err := k.RunRecord(ctx, id)
		switch {
		case err == nil:
			f.Record, f.Env = &rec, rec.Env
		case !errors.Is(err, ErrNotFound):
			return FoundRun{}, err
		}
	}
	if f.Env == "" {
		return FoundRun{}, fmt.Errorf("%w: no run %s (the environment's page lists its runs)", ErrNotFound, id)
	}
	if team := spec.TeamOf(f.Env); !visibleTo(ctx, team) {
		t, _ := caller(ctx)
		return FoundRun{}, fmt.Errorf("%w: token %s is limited to teams %s, and run %s is of another team",
			ErrForbidden, t.Name, strings.Join(t.Teams, ", "), id)
	}
	return f, nil
}
