package server

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"knit.dev/knit/internal/gitwatch"
	"knit.dev/knit/internal/store"
)

// GitOps in three steps, each durable before the next:
//
//  1. pollGit turns each new commit into the desired state of every
//     environment the commit's tree declares (plan.go: a gitWant per
//     environment, pending when it changed), written with the commit
//     pointer in one transaction: a commit is never half-processed.
//  2. reconcileWants starts a run for each pending want (reconcile.go). A
//     want stops being pending only once its run started, that is once
//     the environment's revision is recorded; a run refused because the
//     environment is locked is retried with backoff, and a want whose run
//     was still queued at shutdown is still pending after a restart.
//  3. A run a shutdown interrupted is resumed after the restart, as a run
//     a crash interrupted is (Open).
//
// One server at a time does all this: the holder of the watcher's lease
// (lease.go); another server on the same data dir serves without polling.

// GitConfig switches on GitOps: the repository and folder of environment
// files to follow, and how often to fetch.
type GitConfig struct {
	gitwatch.Config
	// Poll is how often to fetch (default 1m); a signed webhook fetches at once.
	Poll time.Duration
	// Lease is how long the watcher's lease lives without renewal (default
	// 30s); it is renewed three times as often.
	Lease time.Duration
}

// Settings the git loop keeps in the store.
const (
	settingCommit  = "git.commit"   // the last commit whose wants are recorded
	settingFile    = "git.file:"    // + path: the environment the file last validly declared
	settingWant    = "git.env:"     // + env ID: the environment's gitWant, as JSON
	settingInvalid = "git.invalid:" // + path: the ID an invalid file is recorded under
	settingResume  = "resume:"      // + env ID: the kind of a run a shutdown interrupted
)

// gitLoop polls the repository on a ticker (and on a webhook's nudge) while
// it holds the watcher's lease, and reconciles what each commit wants.
func (s *Server) gitLoop(ctx context.Context) {
	w, err := gitwatch.New(s.cfg.Git.Config)
	if err != nil {
		s.log.Error("git: cannot watch", "err", err)
		return
	}
	// A revision applied long ago runs from its commit's tree, which the
	// watcher may have pruned since.
	s.k.SetDirRestorer(w.Restore)
	poll := s.cfg.Git.Poll
	if poll <= 0 {
		poll = time.Minute
	}
	lease := newGitLease(s)
	defer lease.release()
	pollT := time.NewTicker(poll)
	defer pollT.Stop()
	leaseT := time.NewTicker(lease.every())
	defer leaseT.Stop()
	for {
		if lease.hold(ctx) {
			s.pollGit(ctx, w)
			s.reconcileWants(ctx, w)
		}
		if !s.waitGit(ctx, pollT.C, leaseT.C, lease) {
			return
		}
	}
}

// waitGit waits for the next poll: its tick, a nudge, or a chance to take
// the lease; it renews a held lease meanwhile. It is false once ctx ends.
func (s *Server) waitGit(ctx context.Context, poll, renew <-chan time.Time, lease *gitLease) bool {
	for {
		select {
		case <-poll:
			return true
		case <-s.nudge:
			return true
		case <-renew:
			if !lease.held() {
				return true // try to take it
			}
			lease.hold(ctx)
		case <-ctx.Done():
			return false
		}
	}
}

// wake asks the git loop to poll and reconcile now.
func (s *Server) wake() {
	select {
	case s.nudge <- struct{}{}:
	default:
	}
}

func (s *Server) pollGit(ctx context.Context, w *gitwatch.Watcher) {
	last, err := s.k.Setting(ctx, settingCommit)
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		s.log.Error("git: read the last commit", "err", err)
		return
	}
	commits, err := w.Poll(ctx, last)
	if err != nil {
		if ctx.Err() == nil {
			s.log.Error("git: poll", "err", err)
		}
		return
	}
	s.met.polled()
	for _, c := range commits {
		if err := s.recordCommit(ctx, c); err != nil {
			if ctx.Err() == nil {
				s.log.Error("git: record the commit", "commit", c.Hash, "err", err)
			}
			return
		}
	}
}

func commitReason(c gitwatch.Commit) string {
	subject, _, _ := strings.Cut(strings.TrimSpace(c.Message), "\n")
	return fmt.Sprintf("commit %s: %s", short(c.Hash), subject)
}

func short(hash string) string {
	if len(hash) > 10 {
		return hash[:10]
	}
	return hash
}
