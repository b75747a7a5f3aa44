package gitops

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"

	"knit.dev/knit/internal/gitwatch"
	"knit.dev/knit/internal/knit"
	"knit.dev/knit/internal/store"
)

// A preview of a branch nobody reviewed is judged by the policies the
// watched branch has: its last processed commit's policies/ and the
// spec.policies folders the watched branch's file of the environment
// names, read in that commit's tree. The branch's own policies/ and
// spec.policies are never read (a policy is code: a branch's warn could
// return any file the server reads), whatever the branch changed.

// watchedTree is the tree of the watched branch's last processed commit
// ("" before the first commit is recorded: only the server's --policies
// judge).
func (g *Reconciler) watchedTree(ctx context.Context, w *gitwatch.Watcher) (string, error) {
	last, err := knit.NewRecords(g.k).Setting(ctx, settingCommit)
	if errors.Is(err, store.ErrNotFound) || (err == nil && last == "") {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	return w.Checkout(ctx, last)
}

// watchedPolicies are the tree whose policies/ judge a preview of the
// environment the watched branch wants as want (zero: it has no file of
// it), and that file's spec.policies folders in the same tree. A file of
// the watched branch that no longer validates there is an error: the
// preview fails closed.
func (g *Reconciler) watchedPolicies(tree string, want gitWant) (string, []string, error) {
	if tree == "" || want.Commit == "" || want.Teardown {
		return tree, nil, nil
	}
	content, err := os.ReadFile(filepath.Join(tree, filepath.FromSlash(want.Path)))
	if errors.Is(err, os.ErrNotExist) {
		return tree, nil, nil // recorded from an older commit: nothing of it to read here
	}
	if err != nil {
		return "", nil, fmt.Errorf("the watched branch's %s: %w", want.Path, err)
	}
	env, diags := g.wantedEnv(want, filepath.Join(tree, filepath.FromSlash(path.Dir(want.Path))), tree, content)
	if diags.HasErrors() {
		return "", nil, fmt.Errorf("the watched branch's %s does not validate, so its policies cannot judge the preview:\n%s", want.Path, diags.String())
	}
	var dirs []string
	for _, p := range env.Spec.Policies {
		dir, err := env.LocalPath(p)
		if err != nil {
			return "", nil, fmt.Errorf("the watched branch's %s: spec.policies: %w", want.Path, err)
		}
		dirs = append(dirs, dir)
	}
	return tree, dirs, nil
}
