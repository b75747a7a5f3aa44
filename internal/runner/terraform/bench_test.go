package terraform_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"knit.dev/knit/internal/runner"
	"knit.dev/knit/internal/runner/terraform"
	"knit.dev/knit/internal/spec"
	"knit.dev/knit/internal/testtools"
)

// benchComponent is a component whose module holds 50 files of 2 KiB in
// five folders, as a mid-sized real module does.
func benchComponent(b *testing.B) (runner.Component, string) {
	envDir, data := b.TempDir(), b.TempDir()
	for i := range 50 {
		p := filepath.Join(envDir, "mod", fmt.Sprintf("d%d", i%5), fmt.Sprintf("f%02d.tf", i))
		if i < 5 {
			p = filepath.Join(envDir, "mod", fmt.Sprintf("f%02d.tf", i))
		}
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			b.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(strings.Repeat("# padding\n", 200)), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	def := localModule("mod")
	def.Type = spec.TypeTerraform
	env := &spec.Environment{Dir: envDir, File: filepath.Join(envDir, "env.yaml"),
		Spec: spec.EnvSpec{TeamName: "team", EnvName: "bench", Components: []*spec.Component{def}}}
	return runner.Component{Env: env.ID(), Spec: env, Def: def, WorkDir: filepath.Join(data, "work", def.Name), Log: &testtools.Log{}}, data
}

var benchInputs = runner.Inputs{"vpc_id": "vpc-123", "subnets": []any{"a", "b", "c"}, "size": 3}

// BenchmarkFingerprint measures what a component costs on the no-op path:
// its fingerprint, with file hashes cached (size and mtime unchanged).
func BenchmarkFingerprint(b *testing.B) {
	c, data := benchComponent(b)
	r := terraform.New(terraform.Binary{Path: "/nonexistent/tofu"}, terraform.Options{DataDir: data, ToolVersion: toolVersion})
	ctx := context.Background()
	for b.Loop() {
		if _, err := r.Fingerprint(ctx, c, benchInputs); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkFingerprintCold measures a fingerprint with no cached file
// hashes: the first one a knit process takes of each component.
func BenchmarkFingerprintCold(b *testing.B) {
	c, data := benchComponent(b)
	ctx := context.Background()
	for b.Loop() {
		r := terraform.New(terraform.Binary{Path: "/nonexistent/tofu"}, terraform.Options{DataDir: data, ToolVersion: toolVersion})
		if _, err := r.Fingerprint(ctx, c, benchInputs); err != nil {
			b.Fatal(err)
		}
	}
}
