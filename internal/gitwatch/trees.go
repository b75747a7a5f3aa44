package gitwatch

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

// checkoutAll sets each commit's Dir, then prunes old trees, keeping these.
func (w *Watcher) checkoutAll(ctx context.Context, commits []Commit) error {
	keep := map[string]bool{}
	for i := range commits {
		dir, err := w.tree(ctx, commits[i].Hash)
		if err != nil {
			return err
		}
		commits[i].Dir = dir
		keep[commits[i].Hash] = true
	}
	return w.prune(keep)
}

// tree returns trees/<commit>, writing it the first time through a private
// index into a temporary folder that is then renamed, so a tree folder is
// always complete. Reusing a tree marks it recently used, for prune.
func (w *Watcher) tree(ctx context.Context, commit string) (string, error) {
	if dir, ok, err := w.written(commit); ok {
		return dir, err
	}
	dir := filepath.Join(w.trees, commit)
	if err := os.MkdirAll(w.trees, 0o755); err != nil {
		return "", err
	}
	tmp, err := os.MkdirTemp(w.trees, ".tmp-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(tmp)
	defer os.Remove(tmp + ".index")
	c := command{
		args: []string{"read-tree", "--reset", "-u", commit},
		env:  []string{"GIT_INDEX_FILE=" + tmp + ".index", "GIT_WORK_TREE=" + tmp},
	}
	if _, err := w.git(ctx, c); err != nil {
		return "", err
	}
	return dir, os.Rename(tmp, dir)
}

// written returns trees/<commit> when it was written, marking it recently
// used (for prune).
func (w *Watcher) written(commit string) (string, bool, error) {
	dir := filepath.Join(w.trees, commit)
	st, err := os.Stat(dir)
	if err != nil || !st.IsDir() {
		return "", false, nil
	}
	now := time.Now()
	return dir, true, os.Chtimes(dir, now, now)
}

// prune removes the trees beyond the KeepTrees most recently used, except
// those in keep, and temporary folders a crash left behind (the cache lock
// is held, so no one else is writing one).
func (w *Watcher) prune(keep map[string]bool) error {
	entries, err := os.ReadDir(w.trees)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	} else if err != nil {
		return err
	}
	type tree struct {
		name string
		used time.Time
	}
	var trees []tree
	var errs []error
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), ".tmp-") {
			errs = append(errs, os.RemoveAll(filepath.Join(w.trees, e.Name())))
			continue
		}
		info, err := e.Info()
		if err != nil {
			errs = append(errs, err)
			continue
		}
		trees = append(trees, tree{e.Name(), info.ModTime()})
	}
	sort.Slice(trees, func(i, j int) bool { return trees[i].used.After(trees[j].used) })
	for i, t := range trees {
		if i >= w.cfg.KeepTrees && !keep[t.name] {
			errs = append(errs, os.RemoveAll(filepath.Join(w.trees, t.name)))
		}
	}
	return errors.Join(errs...)
}
