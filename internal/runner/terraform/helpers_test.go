package terraform_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"knit.dev/knit/internal/runner"
	"knit.dev/knit/internal/runner/terraform"
	"knit.dev/knit/internal/spec"
	"knit.dev/knit/internal/testtools"
)

const toolVersion = "OpenTofu v1.12.6"

// fixture is one component in an environment folder, with a runner of its own.
type fixture struct {
	t      *testing.T
	envDir string
	data   string
	r      *terraform.Runner
	c      runner.Component
	log    *testtools.Log
}

// newFixture writes files into a fresh environment folder and returns a
// fixture for def, run by bin (real tofu unless a test passes a fake).
func newFixture(t *testing.T, bin terraform.Binary, files map[string]string, def *spec.Component) *fixture {
	t.Helper()
	envDir := t.TempDir()
	testtools.WriteFiles(t, envDir, files)
	if def.Type == "" {
		def.Type = spec.TypeTerraform
	}
	env := &spec.Environment{
		Dir:  envDir,
		File: filepath.Join(envDir, "env.yaml"),
		Spec: spec.EnvSpec{TeamName: "team", EnvName: "test", Components: []*spec.Component{def}},
	}
	data := t.TempDir()
	log := &testtools.Log{}
	return &fixture{
		t: t, envDir: envDir, data: data, log: log,
		r: terraform.New(bin, terraform.Options{DataDir: data, ToolVersion: toolVersion}),
		c: runner.Component{Env: env.ID(), Spec: env, Def: def, WorkDir: filepath.Join(data, "work", def.Name), Log: log},
	}
}

func (f *fixture) plan(in runner.Inputs, opts runner.PlanOptions) *runner.Plan {
	f.t.Helper()
	p, err := f.r.Plan(context.Background(), f.c, in, opts)
	if err != nil {
		f.t.Fatalf("Plan: %v\nlog:\n%s", err, f.log)
	}
	return p
}

func (f *fixture) apply(p *runner.Plan) runner.Outputs {
	f.t.Helper()
	out, err := f.r.Apply(context.Background(), f.c, p)
	if err != nil {
		f.t.Fatalf("Apply: %v\nlog:\n%s", err, f.log)
	}
	return out
}

// planApply plans, checks the plan has changes, and applies it.
func (f *fixture) planApply(in runner.Inputs) runner.Outputs {
	f.t.Helper()
	p := f.plan(in, runner.PlanOptions{})
	if !p.HasChanges() {
		f.t.Fatalf("plan has no changes: %+v", p)
	}
	return f.apply(p)
}

func (f *fixture) inits() int64 { return terraform.InitCount(f.r) }

// moduleFile is the path of rel in the component's module copy.
func (f *fixture) moduleFile(rel string) string {
	return filepath.Join(f.c.WorkDir, "module", filepath.FromSlash(rel))
}

func (f *fixture) writeSource(files map[string]string) {
	f.t.Helper()
	testtools.WriteFiles(f.t, f.envDir, files)
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

func readFile(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func addresses(p *runner.Plan) string {
	var s []string
	for _, r := range p.Resources {
		s = append(s, r.Address+":"+string(r.Action))
	}
	return strings.Join(s, ",")
}

func localModule(dir string) *spec.Component {
	return &spec.Component{Name: "app", Module: &spec.Module{Source: "./" + dir}}
}
