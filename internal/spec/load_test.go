package spec

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestLoad(t *testing.T) {
	dir := envDir(t)
	file := filepath.Join(dir, "env.yaml")
	src := header + "    - {name: net, type: terraform, module: {source: ./modules/net}, variablesFile: {path: vars/net.tfvars}}\n"
	if err := os.WriteFile(file, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	// A relative file name: paths inside still resolve against the file's folder.
	t.Chdir(filepath.Join(dir, "modules"))
	env, ds := Load("../env.yaml")
	if ds.HasErrors() {
		t.Fatalf("Load: %s", ds)
	}
	if env.File != "../env.yaml" || env.Dir != dir {
		t.Errorf("File, Dir = %q, %q; want ../env.yaml, %q", env.File, env.Dir, dir)
	}
}

func TestLoadUnreadable(t *testing.T) {
	dir := t.TempDir()
	big := filepath.Join(dir, "big.yaml")
	if err := os.WriteFile(big, make([]byte, MaxFileSize+1), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct{ path, want string }{
		{filepath.Join(dir, "missing.yaml"), "cannot read environment file"},
		{dir, "cannot read environment file"},
		{big, "larger than 16 MiB"},
	} {
		env, ds := Load(tt.path)
		if env != nil || len(ds) != 1 || !strings.Contains(ds[0].Message, tt.want) || ds[0].Pos.File != tt.path {
			t.Errorf("Load(%s) = %v, %v; want one error at the file containing %q", tt.path, env, ds, tt.want)
		}
	}
}

// The examples in the repository are what people copy: they must validate.
func TestExamplesValidate(t *testing.T) {
	files, err := filepath.Glob("../../examples/*/environment.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no examples found: %v", err)
	}
	for _, f := range files {
		env, ds := Load(f)
		if env == nil || ds.HasErrors() {
			t.Errorf("%s:\n%s", f, ds)
		}
	}
}
