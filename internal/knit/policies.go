package knit

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"knit.dev/knit/internal/engine"
	"knit.dev/knit/internal/policy"
	"knit.dev/knit/internal/spec"
)

// judge is the Judge of a run: the Config's policy folders and the run's
// own, compiled; nil when there are none. Policies that do not compile
// still make a Judge, one that fails: the run is recorded, failed with
// the file:line of the error, and nothing of it applies.
func (k *Knit) judge(ctx context.Context, env *spec.Environment, req RunRequest) (engine.Judge, error) {
	var all []policy.Folder
	for _, d := range append(append([]string{}, k.cfg.Policies...), req.PolicyDirs...) {
		all = append(all, policy.Folder{Path: d})
	}
	// A folder of a commit's tree is shown by its path in the repository.
	inTree := func(dir string) policy.Folder {
		f := policy.Folder{Path: dir}
		if rel, err := filepath.Rel(req.Tree, dir); req.Tree != "" && err == nil && !strings.HasPrefix(rel, "..") {
			f.Shown = filepath.ToSlash(rel)
		}
		return f
	}
	if req.Tree != "" {
		if dir := filepath.Join(req.Tree, "policies"); isDir(dir) {
			// Read from the commit only: not through a link out of it
			// (policies/ itself, or a file in it, pointing at the server's).
			if err := spec.ContainTree(req.Tree, dir); err != nil {
				return brokenPolicies{fmt.Errorf("policies/: %w", err)}, nil
			}
			all = append(all, inTree(dir))
		}
	}
	// spec.policies: folders of the environment's own, inside its folder
	// (its commit's tree in GitOps).
	for _, p := range env.Spec.Policies {
		dir, err := env.LocalPath(p)
		if err != nil {
			return brokenPolicies{fmt.Errorf("spec.policies: %w", err)}, nil
		}
		all = append(all, inTree(dir))
	}
	if len(all) == 0 {
		return nil, nil
	}
	set, err := policy.LoadFolders(ctx, all...)
	if err != nil {
		return brokenPolicies{err}, nil
	}
	return set, nil
}

// brokenPolicies judges nothing: every run it judges fails closed.
type brokenPolicies struct{ err error }

func (b brokenPolicies) Judge(context.Context, *engine.EnvPlan) (*engine.Verdict, error) {
	return nil, b.Check()
}

// Check fails the run before it plans anything (engine.Checker).
func (b brokenPolicies) Check() error {
	return fmt.Errorf("the policies do not compile:\n%w", b.err)
}

func isDir(p string) bool {
	info, err := os.Stat(p)
	return err == nil && info.IsDir()
}
