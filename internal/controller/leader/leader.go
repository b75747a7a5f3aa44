// Package leader elects, among the knit serve replicas sharing a store,
// the one that runs the singletons: the git watcher, the drift, expiry
// and health schedules, and the resume of runs a dead replica left. The
// leader holds a lease in the store's table of locks (knit.HoldLease),
// judged by the store's clock as the environments' locks are; it renews
// it every third of its length. A leader that stops renewing (killed,
// hung, cut off from the database) loses it when it expires, and another
// replica takes over then: within one lease. A leader that cannot renew
// for two thirds of a lease stops leading first, so two never lead at
// once by their own reckoning.
package leader

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"time"

	"knit.dev/knit/internal/knit"
	"knit.dev/knit/internal/store"
)

// Name is the lease's name in the store's table of locks (no
// environment's ID lacks a slash, so none clashes).
const Name = "serve:leader"

// Leases is what the elector needs of the library.
type Leases interface {
	HoldLease(ctx context.Context, holder store.Lock, ttl time.Duration) error
	ReleaseLease(ctx context.Context, name, runID string) error
}

// Elector campaigns for the lease and runs the leader's work while it
// holds it.
type Elector struct {
	k     Leases
	lease time.Duration
	log   *slog.Logger
	me    store.Lock
}

// New is an elector over k with a lease of that length (default 30s).
func New(k Leases, lease time.Duration, actor string, log *slog.Logger) *Elector {
	if lease <= 0 {
		lease = 30 * time.Second
	}
	if log == nil {
		log = slog.Default()
	}
	host, _ := os.Hostname()
	id := fmt.Sprintf("serve-%s-%d-%s", host, os.Getpid(), knit.NewRunID())
	return &Elector{k: k, lease: lease, log: log,
		me: store.Lock{Env: Name, RunID: id, Owner: actor, PID: os.Getpid(), Host: host}}
}

// Run campaigns until ctx ends. Each time this replica becomes the
// leader it calls lead with a context that ends when it stops leading
// (or ctx ends), and waits for lead to return before campaigning again.
// On ctx's end the lease is released, so another replica takes over at
// once.
func (e *Elector) Run(ctx context.Context, lead func(ctx context.Context)) error {
	t := time.NewTicker(e.lease / 3)
	defer t.Stop()
	var (
		term    context.CancelFunc
		wg      sync.WaitGroup
		renewed time.Time
	)
	stepDown := func(why string) {
		if term == nil {
			return
		}
		e.log.Info("leader: this replica stops leading", "why", why)
		term()
		wg.Wait()
		term = nil
	}
	defer func() {
		stepDown("shutting down")
		rctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := e.k.ReleaseLease(rctx, Name, e.me.RunID); err != nil && !errors.Is(err, store.ErrLockLost) {
			e.log.Warn("leader: release the lease", "err", err)
		}
	}()
	for {
		err := e.k.HoldLease(ctx, e.me, e.lease)
		var locked *store.LockedError
		switch {
		case err == nil:
			renewed = time.Now()
			if term == nil {
				e.log.Info("leader: this replica leads (git watcher, schedules, resumes)", "lease", e.lease)
				term = startTerm(ctx, &wg, lead)
			}
		case errors.As(err, &locked):
			stepDown("another replica holds the lease")
		default:
			if ctx.Err() != nil {
				return nil
			}
			e.log.Warn("leader: renew the lease", "err", err)
			if term != nil && time.Since(renewed) > e.lease*2/3 {
				stepDown("the lease could not be renewed")
			}
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

// startTerm runs lead in a term of its own; the returned func ends it.
func startTerm(ctx context.Context, wg *sync.WaitGroup, lead func(context.Context)) context.CancelFunc {
	tctx, cancel := context.WithCancel(ctx)
	wg.Add(1)
	go func() { defer wg.Done(); lead(tctx) }()
	return cancel
}
