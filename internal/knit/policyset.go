package knit

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"

	"knit.dev/knit/internal/policy"
	"knit.dev/knit/internal/spec"
	"knit.dev/knit/internal/store"
)

// The repository's policy set: the policies/ folder of the watched
// branch's latest processed commit, recorded in the store (a setting)
// with the commit pointer when GitOps processes a commit, so that every
// run of an environment GitOps manages is judged by it whatever starts
// the run: the API, the dashboard, the CLI on the same store (which runs
// no GitOps), a schedule, a rollback, a resume.
const (
	// SettingRepoPolicies is the setting that holds the set, as JSON.
	SettingRepoPolicies = "git.policies"
	// SettingGitEnv prefixes the setting GitOps keeps for each environment
	// it manages (what the latest commit wants of it): an environment
	// with one is judged by the repository's policy set.
	SettingGitEnv = "git.env:"
	// MaxRepoPolicies bounds the set's text: a policies/ folder over it is
	// recorded as an error, and every run it would judge fails closed.
	MaxRepoPolicies = 1 << 20
)

// repoPolicySet is the recorded set: the commit it is of, its files, or
// why they could not be read (then it judges nothing: every run fails).
type repoPolicySet struct {
	Commit string          `json:"commit"`
	Files  []policy.Source `json:"files,omitempty"`
	Error  string          `json:"error,omitempty"`
}

// RepoPolicySettings is the setting that records commit's policy set,
// read from tree (the commit's checkout): its policies/ folder, from
// inside the tree only. GitOps writes it with the commit pointer, in one
// transaction. A folder that cannot be read (a link out of the tree, a
// file or the whole set over its bound, a parse error is not one) is
// recorded as its error: runs fail closed until a commit fixes it.
func RepoPolicySettings(commit, tree string) (map[string]string, error) {
	set := repoPolicySet{Commit: commit}
	dir := filepath.Join(tree, "policies")
	if isDir(dir) {
		if err := spec.ContainTree(tree, dir); err != nil {
			set.Error = fmt.Sprintf("policies/: %v", err)
		} else if files, err := policy.ReadFolder(policy.Folder{Path: dir, Shown: "policies"}, MaxRepoPolicies); err != nil {
			set.Error = err.Error()
		} else {
			set.Files = files
		}
	}
	raw, err := json.Marshal(set)
	if err != nil {
		return nil, err
	}
	return map[string]string{SettingRepoPolicies: string(raw)}, nil
}

// repoPolicies is the repository's policy set that judges a run of
// environment id, if GitOps manages it; ok is false when none does (the
// environment is not GitOps's, or GitOps has recorded no set yet). A
// store that cannot be read, or a set recorded with an error, is an
// error: the run fails closed, never "no policies".
func (k *Knit) repoPolicies(ctx context.Context, id string, req RunRequest) (set repoPolicySet, ok bool, err error) {
	managed, err := k.gitManaged(ctx, id, req)
	if err != nil || !managed {
		return set, false, err
	}
	raw, err := k.store.Setting(ctx, SettingRepoPolicies)
	if errors.Is(err, store.ErrNotFound) {
		return set, false, nil
	}
	if err != nil {
		return set, false, fmt.Errorf("read the repository's policies: %w", err)
	}
	if err := json.Unmarshal([]byte(raw), &set); err != nil {
		return set, false, fmt.Errorf("read the repository's policies: %w", err)
	}
	if set.Error != "" {
		return set, false, fmt.Errorf("the repository's policies at commit %s cannot be read: %s", shortHash(set.Commit), set.Error)
	}
	return set, true, nil
}

// gitManaged reports whether environment id is one GitOps manages: a run
// from a commit's tree, or an environment GitOps keeps what it wants of.
func (k *Knit) gitManaged(ctx context.Context, id string, req RunRequest) (bool, error) {
	if req.Tree != "" || req.Commit != "" {
		return true, nil
	}
	_, err := k.store.Setting(ctx, SettingGitEnv+id)
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, store.ErrNotFound):
		return false, nil
	default:
		return false, fmt.Errorf("read whether GitOps manages %s: %w", id, err)
	}
}
