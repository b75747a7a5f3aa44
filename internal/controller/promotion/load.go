package promotion

import (
	"fmt"
	"os"
	"path"
	"path/filepath"

	"knit.dev/knit/internal/spec"
)

// loadStage is load of stage i of p, refused when it does not fit the
// pipeline (another team's environment).
func (c *Controller) loadStage(dir, file string, p *spec.Pipeline, i int, promote map[string]any) (*spec.Environment, error) {
	env, err := c.load(dir, file, p.Spec.Stages[i], promote)
	if err != nil {
		return nil, err
	}
	if ds := p.CheckStage(i, env); ds.HasErrors() {
		return nil, fmt.Errorf("stage %s: %s", p.Spec.Stages[i].Name, ds.String())
	}
	return env, nil
}

// load reads a stage's environment from a commit's tree dir, with the
// release's promote parameters when given.
func (c *Controller) load(dir, file string, st spec.Stage, promote map[string]any) (*spec.Environment, error) {
	rel, err := stageRel(file, st)
	if err != nil {
		return nil, err
	}
	data, err := readInTree(dir, rel)
	if err != nil {
		return nil, fmt.Errorf("stage %s: %w", st.Name, err)
	}
	return c.parse(dir, rel, st, data, promote)
}

// parse reads stage st's environment from data, its file rel in the tree
// dir (where its template and bases are), with promote parameters.
func (c *Controller) parse(dir, rel string, st spec.Stage, data []byte, promote map[string]any) (*spec.Environment, error) {
	opts := c.cfg.Spec.InRepo(dir)
	opts.Promote = promote
	env, ds := spec.ParseWith(rel, filepath.Join(dir, filepath.FromSlash(path.Dir(rel))), dir, data, opts)
	if ds.HasErrors() {
		return nil, fmt.Errorf("stage %s: %s", st.Name, ds.String())
	}
	return env, nil
}

// stageRel is stage st's file inside the repository, refused outside it.
func stageRel(file string, st spec.Stage) (string, error) {
	rel := path.Join(path.Dir(file), st.File)
	if !filepath.IsLocal(filepath.FromSlash(rel)) {
		return "", fmt.Errorf("stage %s: %s is outside the repository", st.Name, st.File)
	}
	return rel, nil
}

// readInTree reads file rel of a commit's tree dir, refused when it, or a
// symlink on its way, leads out of the tree (a committed link such as
// stages/prod.yaml -> /etc/knit/other.yaml would show and apply a file of
// the server's disk).
func readInTree(dir, rel string) ([]byte, error) {
	full, err := spec.Contain(dir, dir, filepath.FromSlash(rel))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", rel, err)
	}
	return os.ReadFile(full)
}
