package gitops

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"knit.dev/knit/internal/knit"
	"knit.dev/knit/internal/store"
)

// gitLeaseName is the lock, in the store's table of locks, that the
// server watching the repository holds. No environment has this ID (an
// environment's has a slash).
const gitLeaseName = "git:watcher"

// defaultGitLease is how long the watcher's lease lives unrenewed.
const defaultGitLease = 30 * time.Second

// gitLease is the watcher's lease: of the servers sharing a store, the one
// holding it polls and reconciles; the others serve without polling and
// take over once it expires (or at once, when its holder is a process of
// this host that is gone).
type gitLease struct {
	g     *Reconciler
	lock  store.Lock
	lease time.Duration
	have  bool
	// renewed is when the lease was last taken or renewed.
	renewed time.Time
	// told: the log said another server watches (once per change).
	told bool
}

func newGitLease(g *Reconciler) *gitLease {
	lease := g.cfg.Lease
	if lease <= 0 {
		lease = defaultGitLease
	}
	host, _ := os.Hostname()
	id := fmt.Sprintf("serve-%s-%d-%s", host, os.Getpid(), knit.NewRunID())
	return &gitLease{g: g, lease: lease,
		lock: store.Lock{Env: gitLeaseName, RunID: id, Owner: g.cfg.Actor, PID: os.Getpid(), Host: host}}
}

// every is how often the lease is renewed.
func (l *gitLease) every() time.Duration { return l.lease / 3 }

func (l *gitLease) held() bool { return l.have }

// current reports whether this server holds the lease, taking it or
// renewing it unless it was renewed less than every() ago: a poll of a
// server that holds it writes nothing.
func (l *gitLease) current(ctx context.Context) bool {
	if l.have && l.g.clock.Now().Sub(l.renewed) < l.every() {
		return true
	}
	return l.hold(ctx)
}

// hold takes or renews the lease and reports whether this server holds it.
func (l *gitLease) hold(ctx context.Context) bool {
	now := l.g.clock.Now()
	err := l.g.k.State().HoldLease(ctx, l.lock, l.lease)
	var locked *store.LockedError
	switch {
	case err == nil:
		if !l.have {
			l.g.log.Info("git: this server watches the repository", "lease", l.lease)
			l.g.mu.Lock()
			l.g.memo = gitMemo{} // read again: another server may have written since
			l.g.mu.Unlock()
		}
		l.have, l.told, l.renewed = true, false, now
	case errors.As(err, &locked):
		if !l.told {
			l.g.log.Info("git: another server watches the repository; this one serves without polling",
				"holder", locked.Holder.Host, "pid", locked.Holder.PID, "expires", locked.Holder.Expires)
			l.told = true
		}
		l.have = false
	default:
		if ctx.Err() == nil {
			l.g.log.Error("git: the watcher's lease", "err", err)
		}
		l.have = false
	}
	return l.have
}

// release frees the lease, so that another server takes over at once.
func (l *gitLease) release() {
	if !l.have {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := l.g.k.State().ReleaseLease(ctx, gitLeaseName, l.lock.RunID); err != nil {
		l.g.log.Warn("git: release the watcher's lease", "err", err)
	}
	l.have = false
}
