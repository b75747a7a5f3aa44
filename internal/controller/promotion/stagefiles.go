package promotion

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"path"

	"github.com/pmezard/go-difflib/difflib"

	"knit.dev/knit/internal/gitwatch"
	"knit.dev/knit/internal/knit"
	"knit.dev/knit/internal/notify"
	"knit.dev/knit/internal/spec"
	"knit.dev/knit/internal/store"
	"knit.dev/knit/internal/view"
)

// readStageFiles records, for each stage of p, its own file at commit
// (tree dir): the first content seen is the stage's; a content other
// than the one last seen is a change, seen once: Queued (immediate) or
// Pending (its diff from what the stage runs, and a stage.pending
// notification). A later change replaces one not applied yet. A write
// that raced another is done again from what the store now holds.
func (c *Controller) readStageFiles(ctx context.Context, dir, file string, p *spec.Pipeline, commit gitwatch.Commit, envs map[string]string) error {
	var errs []error
	for i, st := range p.Spec.Stages {
		if st.IsFleet() {
			continue // no file of its own: each environment's is read at the release's commit
		}
		rel := path.Join(path.Dir(file), st.File)
		data, err := readInTree(dir, rel)
		if err != nil {
			errs = append(errs, fmt.Errorf("stage %s: %w", st.Name, err))
			continue
		}
		for try := 0; ; try++ {
			err = c.seeStageFile(ctx, p, i, rel, data, commit, envs[st.Name])
			if !errors.Is(err, store.ErrConflict) || try == 2 {
				break
			}
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("stage %s: %w", st.Name, err))
		}
	}
	return errors.Join(errs...)
}

// seeStageFile is readStageFiles for stage i, its file rel holding data.
func (c *Controller) seeStageFile(ctx context.Context, p *spec.Pipeline, i int, rel string, data []byte, commit gitwatch.Commit, envID string) error {
	st, name := p.Spec.Stages[i], p.Metadata.Name
	f, err := c.k.Facts(ctx, name)
	if err != nil {
		return err
	}
	sf, hash := f.Files[st.Name], hashOf(data)
	if sf.Version > 0 && sf.SeenHash == hash {
		return nil
	}
	first := sf.Version == 0 || sf.SeenHash == ""
	sf.Pipeline, sf.Stage, sf.SeenHash, sf.SeenCommit = name, st.Name, hash, commit.Hash
	if first {
		return c.k.PutStageFile(ctx, sf, envID, false)
	}
	base := sf.AppliedCommit
	if cur := f.Status(c.clock.Now()).Stages[i].Current; base == "" && cur != nil {
		if r := f.ReleaseByID(cur.Release); r != nil {
			base = r.Commit
		}
	}
	if base == "" {
		base = sf.SeenCommit
	}
	author, verified := authorOf(commit)
	sf.Change = view.StageChangeRecord{ID: "c-" + short12(commit.Hash), Commit: commit.Hash, Hash: hash, Diff: c.diffFrom(ctx, base, rel, data, commit.Hash),
		State: store.StageChangeQueued, Author: author, AuthorVerified: verified, Subject: firstLine(commit.Message), Actor: c.cfg.Actor,
		ChangedAt: c.clock.Now()}
	if p.StageChangesWait(i) {
		sf.Change.State = store.StageChangePending
	}
	if err := c.k.PutStageFile(ctx, sf, envID, true); err != nil {
		return err
	}
	c.log.Info("pipelines: stage file changed", "pipeline", name, "stage", st.Name, "change", sf.Change.ID, "state", sf.Change.State)
	if sf.Change.State == store.StageChangePending {
		c.notify(notify.Event{Kind: notify.KindStagePending, Env: envID, Pipeline: name, Release: sf.Change.ID, Stage: st.Name,
			Summary: fmt.Sprintf("stage %s of pipeline %s has a pending change %s (commit %s by %s: %s): knit promote %s --change %s --to %s",
				st.Name, name, sf.Change.ID, short(commit.Hash), author, sf.Change.Subject, name, sf.Change.ID, st.Name)})
	}
	return nil
}

// diffFrom is the unified diff of file rel from its content at commit
// base to data (commit to).
func (c *Controller) diffFrom(ctx context.Context, base, rel string, data []byte, to string) string {
	old, err := c.fileAt(ctx, base, rel)
	if err != nil {
		return fmt.Sprintf("(%s at %s cannot be read: %v)\n", rel, short(base), err)
	}
	d, err := difflib.GetUnifiedDiffString(difflib.UnifiedDiff{A: difflib.SplitLines(string(old)), B: difflib.SplitLines(string(data)),
		FromFile: rel + "@" + short(base), ToFile: rel + "@" + short(to), Context: 3})
	if err != nil {
		return err.Error()
	}
	return d
}

// fileAt is file rel of the repository at commit.
func (c *Controller) fileAt(ctx context.Context, commit, rel string) ([]byte, error) {
	dir, err := c.w.Checkout(ctx, commit)
	if err != nil {
		return nil, err
	}
	return readInTree(dir, rel)
}

func hashOf(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

func short12(h string) string {
	if len(h) > 12 {
		return h[:12]
	}
	return h
}

// stageData is the stage file a run applying release r (at commit r's,
// whose copy of the file is own) to stage i of f reads: its own copy when
// the stage has no other, or when it carries the stage's approved (or
// failed) newest change (for the first stage, whose file is the
// release's, any change); else the copy the stage got last, so a release
// made before a change of the stage's file never undoes it. carried is
// the stage file to record as carried by r (nil: none).
func (c *Controller) stageData(ctx context.Context, f *knit.PipelineFacts, i int, rel, commit string, own []byte) (data []byte, from string, carried *view.StageFileRecord, err error) {
	sf, ok := f.Files[f.Def.Spec.Stages[i].Name]
	if !ok {
		return own, commit, nil, nil
	}
	h, ch := hashOf(own), sf.Change
	switch {
	case ch.Hash == h && (ch.State == store.StageChangeQueued || ch.State == store.StageChangeFailed || i == 0 && ch.State == store.StageChangePending):
		return own, commit, &sf, nil
	case sf.AppliedCommit == "" || sf.AppliedCommit == commit:
		return own, commit, nil, nil
	}
	applied, err := c.fileAt(ctx, sf.AppliedCommit, rel)
	if err != nil {
		return nil, "", nil, err
	}
	if hashOf(applied) == h {
		return own, commit, nil, nil
	}
	return applied, sf.AppliedCommit, nil, nil
}
