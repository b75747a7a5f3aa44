package bench

import (
	"os"
	"path/filepath"
	"testing"

	"knit.dev/knit/internal/spec"
)

// The canary figures' environments are valid, the canary one rolling out
// by a canary strategy and the plain one by none.
func TestCanaryEnvironmentsValidate(t *testing.T) {
	dir := t.TempDir()
	if d := os.Getenv("KNIT_BENCH_KEEP"); d != "" {
		dir = d
	}
	for _, canary := range []bool{true, false} {
		file, err := writeCanaryEnv(dir, "2", canary, "http://127.0.0.1:1/healthz")
		if err != nil {
			t.Fatal(err)
		}
		text, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		env, diags := spec.Parse(filepath.Base(file), dir, text)
		if diags.HasErrors() {
			t.Fatalf("%s:\n%s\n%v", file, text, diags)
		}
		if got := env.Spec.Canary() != nil; got != canary {
			t.Errorf("%s: a canary strategy %v, want %v", file, got, canary)
		}
	}
}
