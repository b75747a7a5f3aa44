package gitops

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"

	"knit.dev/knit/internal/spec"
	"knit.dev/knit/internal/store"
)

// A pipeline's stages are environments the promotion controller applies,
// not GitOps: each stage's file with the release's promote parameters
// (the first stage's). A branch that changes what a stage would apply (a
// template every stage is built from, a promote parameter of the first
// stage's file, a stage's own file) previews that stage: its file at the
// branch's commit with the branch's release, planned against what the
// stage applied. A stage the branch leaves as the watched tree has it is
// not previewed.

// stageChanges are the stages of Config.Pipelines that commit tree dir
// changes compared with the watched tree, but those already in ids (a
// GitOps environment of the same ID). A pipeline or stage file that does
// not load at the branch is logged and left out: the promotion controller
// reports it once merged.
func stageChanges(g *Reconciler, dir, watched string, ids map[string]bool) []branchEnv {
	var out []branchEnv
	for _, file := range g.cfg.Pipelines {
		now, err := loadStages(g, dir, file)
		if err != nil {
			g.log.Warn("git: a branch's pipeline is not previewed", "pipeline", file, "err", err)
			continue
		}
		was := map[string]stageEnv{}
		if watched != "" {
			before, err := loadStages(g, watched, file)
			if err != nil && !errors.Is(err, os.ErrNotExist) {
				g.log.Warn("git: the watched branch's pipeline does not load; previewing every stage", "pipeline", file, "err", err)
			}
			for _, s := range before {
				was[s.env.ID()] = s
			}
		}
		for _, s := range now {
			id := s.env.ID()
			old, ok := was[id]
			if ids[id] || (ok && old.sum == s.sum) {
				continue
			}
			ids[id] = true
			e := branchEnv{id: id, change: store.PreviewCreate, path: s.path, env: s.env, folder: s.folder}
			if ok {
				e.change = store.PreviewUpdate
			}
			out = append(out, e)
		}
	}
	return out
}

// stageEnv is one stage's environment as a release would apply it.
type stageEnv struct {
	env          *spec.Environment
	path, folder string
	sum          string
}

// loadStages loads pipeline file's stages in tree dir as the promotion
// controller applies a release of that tree: the first stage's file
// names the release, the others take its promote parameters.
func loadStages(g *Reconciler, dir, file string) ([]stageEnv, error) {
	data, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(file)))
	if err != nil {
		return nil, err
	}
	p, ds := spec.ParsePipeline(file, data)
	if ds.HasErrors() {
		return nil, errors.New(ds.String())
	}
	var promote map[string]any
	out := make([]stageEnv, 0, len(p.Spec.Stages))
	cs := newContentSums()
	for i, st := range p.Spec.Stages {
		if st.IsFleet() {
			continue // a fleet's environments are previewed as their own files
		}
		s, err := loadStage(g, dir, file, st, promote, cs)
		if err != nil {
			return nil, err
		}
		if ds := p.CheckStage(i, s.env); ds.HasErrors() {
			return nil, errors.New(ds.String())
		}
		if i == 0 {
			content, err := spec.ReleaseOf(s.env)
			if err != nil {
				return nil, fmt.Errorf("stage %s: %w", st.Name, err)
			}
			promote = content.Params
		}
		out = append(out, s)
	}
	return out, nil
}

// loadStage reads stage st's file of pipeline file in tree dir with the
// promote parameters, and hashes what it reads with them.
func loadStage(g *Reconciler, dir, file string, st spec.Stage, promote map[string]any, cs contentSums) (stageEnv, error) {
	rel := path.Join(path.Dir(file), st.File)
	if !filepath.IsLocal(filepath.FromSlash(rel)) {
		return stageEnv{}, fmt.Errorf("stage %s: %s is outside the repository", st.Name, st.File)
	}
	data, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(rel)))
	if err != nil {
		return stageEnv{}, fmt.Errorf("stage %s: %w", st.Name, err)
	}
	opts := g.cfg.Spec.InRepo(dir)
	opts.Promote = promote
	folder := filepath.Join(dir, filepath.FromSlash(path.Dir(rel)))
	env, ds := spec.ParseWith(rel, folder, dir, data, opts)
	if ds.HasErrors() {
		return stageEnv{}, fmt.Errorf("stage %s: %s", st.Name, ds.String())
	}
	params, _ := json.Marshal(promote) // plain values decoded from YAML: cannot fail
	sum, err := cs.env(env, append(append(data, 0), params...))
	if err != nil {
		return stageEnv{}, fmt.Errorf("stage %s: %w", st.Name, err)
	}
	return stageEnv{env: env, path: rel, folder: folder, sum: sum}, nil
}
