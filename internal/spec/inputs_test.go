package spec

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

func TestLocalInputsResolveFromTheFilesFolder(t *testing.T) {
	dir := envDir(t)
	src := header + `    - {name: net, type: terraform, module: {source: ./modules/net}, variablesFile: {path: vars/net.tfvars},
       overlayFiles: [{paths: [overlays/extra.tf]}]}
    - {name: remote, type: terraform, module: {source: "git::https://example.com/m.git?ref=v1"}}
`
	if err := os.WriteFile(filepath.Join(dir, "env.yaml"), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	env, ds := Load(filepath.Join(dir, "env.yaml"))
	if ds.HasErrors() {
		t.Fatalf("Load: %s", ds)
	}
	got := env.LocalInputs(env.Spec.Components[0])
	want := []string{filepath.Join(dir, "modules/net"), filepath.Join(dir, "vars/net.tfvars"), filepath.Join(dir, "overlays/extra.tf")}
	if !slices.Equal(got, want) {
		t.Errorf("inputs of net = %q, want %q", got, want)
	}
	if got := env.LocalInputs(env.Spec.Components[1]); len(got) != 0 {
		t.Errorf("a git module reads no local files, got %q", got)
	}
}
