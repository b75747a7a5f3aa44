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
//
// An environment GitOps manages is judged by the repository's policy set
// (the watched branch's latest processed commit's policies/, as recorded
// in the store) in place of req.Tree's: whatever started the run. A set
// that cannot be read fails the run closed.
func (k *Knit) judge(ctx context.Context, env *spec.Environment, req RunRequest) (engine.Judge, error) {
	repo, fromRepo, err := k.repoPolicies(ctx, env.ID(), req)
	if err != nil {
		return brokenPolicies{err: err, why: "the policies cannot be read"}, nil
	}
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
	if req.Tree != "" && !fromRepo {
		if dir := filepath.Join(req.Tree, "policies"); isDir(dir) {
			// Read from the commit only: not through a link out of it
			// (policies/ itself, or a file in it, pointing at the server's).
			if err := spec.ContainTree(req.Tree, dir); err != nil {
				return brokenPolicies{err: fmt.Errorf("policies/: %w", err)}, nil
			}
			all = append(all, inTree(dir))
		}
	}
	// spec.policies: folders of the environment's own, inside its folder
	// (its commit's tree in GitOps).
	for _, p := range env.Spec.Policies {
		dir, err := env.LocalPath(p)
		if err != nil {
			return brokenPolicies{err: fmt.Errorf("spec.policies: %w", err)}, nil
		}
		all = append(all, inTree(dir))
	}
	if len(all) == 0 && len(repo.Files) == 0 {
		return nil, nil
	}
	set, err := policy.LoadSources(ctx, repo.Files, all...)
	if err != nil {
		return brokenPolicies{err: err}, nil
	}
	return set, nil
}

// brokenPolicies judges nothing: every run it judges fails closed. why
// says what is wrong (default: they do not compile).
type brokenPolicies struct {
	err error
	why string
}

func (b brokenPolicies) Judge(context.Context, *engine.EnvPlan) (*engine.Verdict, error) {
	return nil, b.Check()
}

// Check fails the run before it plans anything (engine.Checker).
func (b brokenPolicies) Check() error {
	why := b.why
	if why == "" {
		why = "the policies do not compile"
	}
	return fmt.Errorf("%s:\n%w", why, b.err)
}

func isDir(p string) bool {
	info, err := os.Stat(p)
	return err == nil && info.IsDir()
}
