package kubecontroller_test

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"knit.dev/knit/internal/kubecontroller"
	"knit.dev/knit/internal/testtools"
)

var update = flag.Bool("update", false, "rewrite deploy/crds and the chart's crds from the Go types")

// TestCRDFiles: the CRDs in deploy/crds, the chart's (install-crds
// installs CRDs() itself) are exactly what the Go types generate, so a field added to
// the environment file (spec.EnvSpec) or to the status reaches them.
func TestCRDFiles(t *testing.T) {
	root := testtools.ModuleRoot(t)
	dirs := []string{filepath.Join(root, "deploy", "crds"), filepath.Join(root, "deploy", "helm", "knit", "crds")}
	for _, c := range kubecontroller.CRDs() {
		want, err := kubecontroller.CRDYAML(c)
		if err != nil {
			t.Fatal(err)
		}
		name := kubecontroller.CRDFile(c)
		for _, dir := range dirs {
			path := filepath.Join(dir, name)
			if *update {
				if err := os.MkdirAll(dir, 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(path, want, 0o644); err != nil {
					t.Fatal(err)
				}
				continue
			}
			got, err := os.ReadFile(path)
			if err != nil || !bytes.Equal(got, want) {
				t.Errorf("%s differs from the CRD the Go types generate (%v): go test ./internal/kubecontroller -run TestCRDFiles -update", path, err)
			}
		}
	}
}
