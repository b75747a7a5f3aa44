package server

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"knit.dev/knit/internal/engine"
	"knit.dev/knit/internal/gitwatch"
	"knit.dev/knit/internal/knit"
	"knit.dev/knit/internal/spec"
	"knit.dev/knit/internal/store"
)

// GitConfig switches on GitOps: the repository and folder of environment
// files to follow, and how often to fetch.
type GitConfig struct {
	gitwatch.Config
	// Poll is how often to fetch (default 1m); a signed webhook fetches at once.
	Poll time.Duration
}

// Settings the git loop keeps in the store.
const (
	settingCommit = "git.commit" // the last commit reconciled
	settingFile   = "git.file:"  // + path: the environment the file declared
)

// gitLoop polls the repository on a ticker (and on a webhook's nudge) and
// reconciles each new commit in order.
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
	t := time.NewTicker(poll)
	defer t.Stop()
	for {
		s.pollGit(ctx, w)
		select {
		case <-t.C:
		case <-s.nudge:
		case <-ctx.Done():
			return
		}
	}
}

func (s *Server) pollGit(ctx context.Context, w *gitwatch.Watcher) {
	st := s.k.Store()
	last, err := st.Setting(ctx, settingCommit)
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
		s.reconcileCommit(ctx, c)
		if err := st.SetSetting(ctx, settingCommit, c.Hash); err != nil {
			s.log.Error("git: record the commit", "commit", c.Hash, "err", err)
			return
		}
	}
}

// reconcileCommit turns each environment file the commit changed into a
// revision: applied when valid, recorded with its errors when not, torn
// down when removed (or when the file now declares another environment).
func (s *Server) reconcileCommit(ctx context.Context, c gitwatch.Commit) {
	s.log.Info("git: commit", "commit", short(c.Hash), "author", c.Author, "changes", len(c.Changes), "reset", c.Reset)
	for _, ch := range c.Changes {
		if ch.Removed {
			s.gitRemoved(ctx, c, ch.Path, "the file was removed")
			continue
		}
		env, diags := spec.Parse(ch.Path, c.Dir, ch.Content)
		prev, _ := s.k.Store().Setting(ctx, settingFile+ch.Path)
		if diags.HasErrors() {
			s.gitInvalid(ctx, c, ch, env, diags.String(), prev)
			continue
		}
		if prev != "" && prev != env.ID() {
			s.gitRemoved(ctx, c, ch.Path, "the file now declares "+env.ID())
		}
		if err := s.k.Store().SetSetting(ctx, settingFile+ch.Path, env.ID()); err != nil {
			s.log.Error("git: remember the file", "path", ch.Path, "err", err)
		}
		id, err := s.queue.enqueue(knit.RunRequest{Kind: engine.KindApply, Env: env, Actor: c.Author, Source: "git",
			Reason: commitReason(c), Origin: s.cfg.Git.URL + "@" + c.Hash + ":" + ch.Path,
			Root: c.Dir, Commit: c.Hash, Author: c.Author, Message: c.Message}, env.ID())
		if err != nil {
			s.log.Error("git: queue the apply", "env", env.ID(), "err", err)
			continue
		}
		s.log.Info("git: applying", "env", env.ID(), "commit", short(c.Hash), "run", id)
	}
}

// gitRemoved tears down the environment a file declared.
func (s *Server) gitRemoved(ctx context.Context, c gitwatch.Commit, path, why string) {
	env, err := s.k.Store().Setting(ctx, settingFile+path)
	if err != nil || env == "" {
		s.log.Warn("git: a removed file declared no environment knit knows", "path", path)
		return
	}
	if err := s.k.Store().SetSetting(ctx, settingFile+path, ""); err != nil {
		s.log.Error("git: forget the file", "path", path, "err", err)
	}
	id, err := s.queue.enqueue(knit.RunRequest{Kind: engine.KindTeardown, EnvRef: env, Actor: c.Author, Source: "git",
		Reason: fmt.Sprintf("%s (%s): %s", why, path, commitReason(c))}, env)
	if err != nil {
		s.log.Error("git: queue the teardown", "env", env, "err", err)
		return
	}
	s.log.Info("git: tearing down", "env", env, "why", why, "commit", short(c.Hash), "run", id)
}

// gitInvalid records a file that does not validate, with its errors, as a
// revision of the environment it names (or named): nothing runs.
func (s *Server) gitInvalid(ctx context.Context, c gitwatch.Commit, ch gitwatch.Change, env *spec.Environment, errs, prev string) {
	id := prev
	e := store.Environment{ID: prev}
	if env != nil && env.Spec.TeamName != "" && env.Spec.EnvName != "" {
		id = env.ID()
		e = store.Environment{ID: id, Team: env.Spec.TeamName, Name: env.Spec.EnvName, Metadata: env.Metadata.Name}
	}
	if id == "" {
		id = "git/" + strings.TrimSuffix(filepath.Base(ch.Path), filepath.Ext(ch.Path))
		e = store.Environment{ID: id, Team: "git", Name: filepath.Base(ch.Path)}
	}
	if e.Team == "" {
		e.Team, e.Name, _ = strings.Cut(id, "/")
	}
	sum := sha256.Sum256(ch.Content)
	rev, err := s.k.RecordInvalid(ctx, e, store.Revision{Env: id, Hash: hex.EncodeToString(sum[:]),
		Source: s.cfg.Git.URL + "@" + c.Hash + ":" + ch.Path, Spec: ch.Content, Commit: c.Hash, Author: c.Author,
		Message: c.Message, Errors: errs}, c.Author)
	if err != nil {
		s.log.Error("git: record the invalid file", "path", ch.Path, "err", err)
		return
	}
	s.log.Warn("git: invalid environment file: nothing runs", "path", ch.Path, "env", id, "revision", rev.Number, "commit", short(c.Hash))
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
