package terraform_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"knit.dev/knit/internal/runner"
	"knit.dev/knit/internal/runner/terraform"
	"knit.dev/knit/internal/spec"
)

func TestFingerprint(t *testing.T) {
	t.Parallel()
	// A fingerprint never runs the tool: a binary that does not exist proves it.
	bin := terraform.Binary{Path: "/nonexistent/tofu"}
	files := map[string]string{
		"mod/main.tf":  `variable "n" {}`,
		"vars.tfvars":  `n = 1`,
		"overlay/o.tf": `# overlay`,
	}
	def := localModule("mod")
	def.VariablesFile = &spec.VariablesFile{Path: "vars.tfvars"}
	def.OverlayFiles = []spec.OverlayFile{{Paths: []string{"overlay"}}}
	f := newFixture(t, bin, files, def)
	ctx := context.Background()
	in := runner.Inputs{"n": 1, "l": []any{"a"}}
	fp := func(r *terraform.Runner, in runner.Inputs) string {
		t.Helper()
		s, err := r.Fingerprint(ctx, f.c, in)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	base := fp(f.r, in)
	if again := fp(f.r, runner.Inputs{"l": []any{"a"}, "n": 1}); again != base {
		t.Error("fingerprint differs between two calls with equal inputs")
	}
	if fileExists(f.c.WorkDir) {
		t.Error("Fingerprint wrote to the work dir")
	}

	changes := map[string]func(){
		"module file":     func() { f.writeSource(map[string]string{"mod/main.tf": `variable "n" { type = number }`}) },
		"new module file": func() { f.writeSource(map[string]string{"mod/more.tf": `# more`}) },
		"variables file":  func() { f.writeSource(map[string]string{"vars.tfvars": `n = 2`}) },
		"overlay file":    func() { f.writeSource(map[string]string{"overlay/o.tf": `# changed`}) },
	}
	prev := base
	for what, change := range changes {
		time.Sleep(10 * time.Millisecond) // a new mtime, even on coarse clocks
		change()
		if now := fp(f.r, in); now == prev {
			t.Errorf("fingerprint unchanged after changing the %s", what)
		} else {
			prev = now
		}
	}
	if fp(f.r, runner.Inputs{"n": 2, "l": []any{"a"}}) == prev {
		t.Error("fingerprint unchanged after changing an input")
	}
	other := terraform.New(bin, terraform.Options{DataDir: f.data, ToolVersion: "OpenTofu v1.13.0"})
	if fp(other, in) == prev {
		t.Error("fingerprint unchanged after changing the tool version")
	}
	// Touching a file without changing it keeps the fingerprint.
	now := time.Now().Add(time.Minute)
	if err := os.Chtimes(f.envDir+"/mod/main.tf", now, now); err != nil {
		t.Fatal(err)
	}
	if fp(f.r, in) != prev {
		t.Error("fingerprint changed although no content did")
	}
}

// An environment folder that holds knit's data dir cannot name another
// component's work dir as its module: nothing of it is copied.
func TestModuleInsideTheDataDirIsRefused(t *testing.T) {
	t.Parallel()
	bin := terraform.Binary{Path: "/nonexistent/tofu"}
	f := newFixture(t, bin, map[string]string{"mod/main.tf": "# mine"}, localModule("mod"))
	if err := os.MkdirAll(f.data+"/work/other", 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(f.data+"/work/other/main.tf", []byte("# another team's"), 0o644); err != nil {
		t.Fatal(err)
	}
	f.c.Spec.Dir = filepath.Dir(f.data) // the environment's folder holds the data dir
	f.c.Def.Module.Source = "./" + filepath.Base(f.data) + "/work/other"
	_, err := f.r.Fingerprint(context.Background(), f.c, runner.Inputs{})
	if err == nil || !strings.Contains(err.Error(), "inside knit's data dir") {
		t.Errorf("err = %v", err)
	}
}
