package engine

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"knit.dev/knit/internal/store"
)

// revisions records the spec a run converges to: a new revision for an
// apply or teardown, made the applied one once the policies let the run
// go on; for a plan or a drift check, which record none, the applied
// revision the run's spec is, if any.
type revisions struct {
	s *session
	// convergesTo is the revision an apply or teardown converges to, made
	// the applied one once the policies let the run go on (markApplied).
	convergesTo int
	// toRecord is that revision before it is recorded, with its
	// environment: the run's start records it with the run (record).
	toRecord *store.Revision
	envRec   store.Environment
}

// revision prepares the spec an apply or teardown converges to as a new
// revision, which record writes with the run and markApplied makes the one
// ENV means once the policies let the run go on. A plan or a drift check
// records none: a plan of an edited file must not move what was applied.
// Their run names the applied revision when the spec is the applied one (0
// otherwise).
func (rv *revisions) revision(ctx context.Context, now time.Time) (int, error) {
	body, err := json.Marshal(rv.s.env)
	if err != nil {
		return 0, fmt.Errorf("encode spec: %w", err)
	}
	// The folder relative paths resolve from is part of what was applied:
	// a commit that changes only a module the spec reads is a new revision
	// (its tree is another folder). A spec read back from a revision has
	// that revision's folder, so it hashes the same.
	h := sha256.New()
	h.Write(body)
	if rv.s.env.Dir != "" {
		h.Write([]byte("\x00dir=" + rv.s.env.Dir))
	}
	hash := hex.EncodeToString(h.Sum(nil))
	id := rv.s.env.ID()
	if rv.s.applies() || rv.s.kind == KindTeardown {
		root, err := rv.root(ctx)
		if err != nil {
			return 0, err
		}
		rv.envRec = store.Environment{ID: id, Team: rv.s.env.Spec.TeamName, Name: rv.s.env.Spec.EnvName, Metadata: rv.s.env.Metadata.Name}
		rv.toRecord = &store.Revision{Env: id, Hash: hash, Source: rv.origin(), Spec: body, CreatedAt: now,
			Root: cmp.Or(root, rv.s.env.Dir), Commit: rv.s.opts.Commit, Author: rv.s.opts.Author, Message: rv.s.opts.Message, File: rv.s.env.Text}
		return 0, nil
	}
	e, err := rv.s.e.Store.Environment(ctx, id)
	if errors.Is(err, store.ErrNotFound) || (err == nil && e.AppliedRevision == 0) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("read environment: %w", err)
	}
	applied, err := rv.s.e.Store.Revision(ctx, id, e.AppliedRevision)
	if err != nil {
		return 0, fmt.Errorf("read applied revision: %w", err)
	}
	if applied.Hash == hash || rv.s.kind == KindDrift {
		return applied.Number, nil
	}
	return 0, nil
}

// record writes the run's start: run, at the revision revision prepared
// (whose number it takes), in one write. It returns the run's revision.
func (rv *revisions) record(ctx context.Context, run store.Run) (int, error) {
	rev, err := rv.s.e.Store.StartRun(ctx, rv.envRec, rv.toRecord, run)
	if err != nil {
		return 0, fmt.Errorf("record run: %w", err)
	}
	if rv.toRecord == nil {
		return run.Revision, nil
	}
	// It becomes the one ENV means once the policies let the run go on
	// (markApplied): a denied run changes nothing, ENV included.
	rv.convergesTo = rev.Number
	return rev.Number, nil
}

// markApplied makes the revision an apply or teardown converges to the
// one ENV means, as the run begins to change things.
func (rv *revisions) markApplied() error {
	if rv.convergesTo == 0 {
		return nil
	}
	if err := rv.s.e.Store.SetAppliedRevision(rv.s.db, rv.s.env.ID(), rv.convergesTo); err != nil {
		return fmt.Errorf("record revision %d as applied: %w", rv.convergesTo, err)
	}
	return nil
}

// root is the folder the revision's relative paths resolve against:
// opts.Root, or, for a teardown of the applied spec (ENV, whose revision
// it records with teardown marked), the root of the revision it came from,
// which a revision of a git commit needs to find its files again.
func (rv *revisions) root(ctx context.Context) (string, error) {
	if rv.s.opts.Root != "" || rv.s.kind != KindTeardown {
		return rv.s.opts.Root, nil
	}
	e, err := rv.s.e.Store.Environment(ctx, rv.s.env.ID())
	if errors.Is(err, store.ErrNotFound) || (err == nil && e.AppliedRevision == 0) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("read environment: %w", err)
	}
	applied, err := rv.s.e.Store.Revision(ctx, rv.s.env.ID(), e.AppliedRevision)
	if err != nil {
		return "", fmt.Errorf("read applied revision: %w", err)
	}
	if applied.Source != rv.origin() {
		return "", nil
	}
	return applied.Root, nil
}

// origin is where the spec came from, absolute so that the revision can be
// loaded again from any folder.
func (rv *revisions) origin() string {
	if rv.s.opts.Origin != "" {
		return rv.s.opts.Origin
	}
	if rv.s.env.File == "" || strings.Contains(rv.s.env.File, "://") {
		return rv.s.env.File // none, or a spec read from a git commit (URL@commit:path)
	}
	if abs, err := filepath.Abs(rv.s.env.File); err == nil {
		return abs
	}
	return rv.s.env.File
}
