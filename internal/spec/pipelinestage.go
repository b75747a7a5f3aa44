package spec

import (
	"fmt"
	"os"
	"path/filepath"

	"knit.dev/knit/internal/diag"
)

// CheckStage reports what makes env unfit to be stage i of p: an
// environment of another team than the pipeline's (a pipeline promotes
// only inside its team; its operators could otherwise apply and roll back
// environments they cannot see). The diagnostic is at the stage file's
// teamName.
func (p *Pipeline) CheckStage(i int, env *Environment) diag.Diagnostics {
	if env == nil || i < 0 || i >= len(p.Spec.Stages) || env.Spec.TeamName == p.Spec.TeamName {
		return nil
	}
	at := nearestIn(p.pos, "spec.teamName", p.File)
	return diag.Diagnostics{{Severity: diag.Error, Pos: env.Pos("spec.teamName"), Field: "spec.teamName",
		Message: fmt.Sprintf("stage %s of pipeline %s is an environment of team %s, not of the pipeline's team %s",
			p.Spec.Stages[i].Name, p.Metadata.Name, quote(env.Spec.TeamName), quote(p.Spec.TeamName)),
		Hint: fmt.Sprintf("a pipeline promotes only inside its team (%s): set teamName: %s here, or give the stage to a pipeline of team %s",
			at, p.Spec.TeamName, env.Spec.TeamName)}}
}

// LoadPipeline reads and validates the pipeline file at path with every
// stage's environment file (relative to the pipeline's folder, loaded
// without a release's promote parameters): every problem of the pipeline,
// of each stage file, and of each stage's fit in the pipeline, at its
// file:line:col. The pipeline is nil only when its file cannot be parsed.
func LoadPipeline(path string, opts Options) (*Pipeline, diag.Diagnostics) {
	data, err := readFile(path)
	if err != nil {
		return nil, diag.Diagnostics{{Severity: diag.Error, Pos: diag.Pos{File: path}, Message: err.Error()}}
	}
	p, ds := ParsePipeline(path, data)
	if p == nil {
		return nil, ds
	}
	dir := filepath.Dir(path)
	for i, st := range p.Spec.Stages {
		if st.File == "" || filepath.IsAbs(st.File) {
			continue // reported by ParsePipeline
		}
		file := filepath.Join(dir, filepath.FromSlash(st.File))
		if _, err := os.Stat(file); err != nil {
			ds = append(ds, diag.Diagnostic{Severity: diag.Error, Pos: nearestIn(p.pos, fmt.Sprintf("spec.stages[%d].file", i), p.File),
				Field: fmt.Sprintf("spec.stages[%d].file", i), Message: fmt.Sprintf("stage %s: cannot read %s", st.Name, quote(st.File)),
				Hint: "name the stage's environment file relative to the pipeline file's folder"})
			continue
		}
		env, eds := LoadWith(file, opts)
		ds = append(ds, eds...)
		ds = append(ds, p.CheckStage(i, env)...)
	}
	ds.Sort()
	return p, ds
}
