package promotion

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"

	"gopkg.in/yaml.v3"

	"knit.dev/knit/internal/engine"
	"knit.dev/knit/internal/knit"
	"knit.dev/knit/internal/spec"
	"knit.dev/knit/internal/view"
)

// How a fleet stage maps a release onto each environment it reaches: the
// environment's own file in the release's commit (the one file of the
// commit's tree that declares kind: Environment with its teamName and
// envName), loaded with the release's promote parameters, exactly as a
// stage's file is. An environment no file of the commit declares, or that
// two files declare, fails in its wave and keeps its release.

// envFiles are the environment files of one commit's tree, by
// environment ID (a path; "" when two files declare it).
type envFiles struct {
	commit string
	byID   map[string]string
}

// envFile is the file declaring environment id in commit's tree dir.
func (fs *fleetStages) envFile(dir, commit, id string) (string, error) {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	if fs.files.commit != commit {
		byID, err := scanEnvFiles(dir)
		if err != nil {
			return "", err
		}
		fs.files = envFiles{commit: commit, byID: byID}
	}
	rel, ok := fs.files.byID[id]
	switch {
	case !ok:
		return "", fmt.Errorf("no file of commit %s declares environment %s (kind: Environment with its teamName and envName)", short(commit), id)
	case rel == "":
		return "", fmt.Errorf("two files of commit %s declare environment %s: keep one", short(commit), id)
	}
	return rel, nil
}

// scanEnvFiles lists the environment files of tree dir by ID. Symlinks
// are not followed (a committed link never leads the scan out of the
// tree), nor is .git.
func scanEnvFiles(dir string) (map[string]string, error) {
	byID := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		switch {
		case err != nil:
			return err
		case d.IsDir() && d.Name() == ".git":
			return filepath.SkipDir
		case !d.Type().IsRegular() || !strings.HasSuffix(p, ".yaml") && !strings.HasSuffix(p, ".yml"):
			return nil
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		var head struct {
			Kind string `yaml:"kind"`
			Spec struct {
				TeamName string `yaml:"teamName"`
				EnvName  string `yaml:"envName"`
			} `yaml:"spec"`
		}
		if yaml.Unmarshal(data, &head) != nil || head.Kind != "Environment" || head.Spec.TeamName == "" || head.Spec.EnvName == "" {
			return nil // not an environment file: not this scan's business
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		id := head.Spec.TeamName + "/" + head.Spec.EnvName
		if _, twice := byID[id]; twice {
			byID[id] = ""
		} else {
			byID[id] = filepath.ToSlash(rel)
		}
		return nil
	})
	return byID, err
}

// fleetRun is the run applying release r to environment env of fleet
// stage st of pipeline f.
func (fs *fleetStages) fleetRun(ctx context.Context, f *knit.PipelineFacts, st spec.Stage, r view.ReleaseRecord, env string) (knit.RunRequest, error) {
	c := fs.c
	dir, err := c.w.Checkout(ctx, r.Commit)
	if err != nil {
		return knit.RunRequest{}, err
	}
	params, err := paramsOf(r.Params)
	if err != nil {
		return knit.RunRequest{}, err
	}
	rel, err := fs.envFile(dir, r.Commit, env)
	if err != nil {
		return knit.RunRequest{}, err
	}
	data, err := readInTree(dir, rel)
	if err != nil {
		return knit.RunRequest{}, err
	}
	e, err := c.parse(dir, rel, st, data, params)
	if err != nil {
		return knit.RunRequest{}, err
	}
	if e.ID() != env || e.Spec.TeamName != f.Record.Team {
		return knit.RunRequest{}, fmt.Errorf("%s declares %s, not %s of team %s", rel, e.ID(), env, f.Record.Team)
	}
	actor, source := runAuthor(r)
	return knit.RunRequest{Kind: engine.KindApply, Env: e, Root: filepath.Join(dir, filepath.FromSlash(path.Dir(rel))), Tree: dir,
		Actor: actor, Source: source, Reason: fmt.Sprintf("pipeline %s: release %s to %s", f.Record.Name, r.ID, st.Name),
		Commit: r.Commit, Author: r.Author, Message: r.Message, Origin: c.cfg.Git.URL + "@" + r.Commit + ":" + rel}, nil
}
