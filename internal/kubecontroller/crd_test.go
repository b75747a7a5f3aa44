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
		for _, dir := range dirs {
			generated(t, filepath.Join(dir, kubecontroller.CRDFile(c)), want, "the CRD the Go types generate", "TestCRDFiles")
		}
	}
}

// TestAdmissionPolicyFiles: deploy/admission's policies and the chart's
// copies are exactly the policies the controller checks for
// (ApproverPolicy, SkipTeardownPolicy).
func TestAdmissionPolicyFiles(t *testing.T) {
	root := testtools.ModuleRoot(t)
	for _, p := range []struct {
		name, chart string
		yaml        func() ([]byte, error)
	}{
		{kubecontroller.ApproversPolicy, "approvers.yaml", kubecontroller.ApproverPolicyYAML},
		{kubecontroller.SkipTeardownPolicy, "skip-teardown.yaml", kubecontroller.SkipTeardownPolicyYAML},
	} {
		body, err := p.yaml()
		if err != nil {
			t.Fatal(err)
		}
		for path, want := range map[string][]byte{
			filepath.Join(root, "deploy", "admission", p.name+".yaml"):          body,
			filepath.Join(root, "deploy", "helm", "knit", "templates", p.chart): append(append([]byte("{{- if .Values.controller.enabled }}\n"), body...), "{{- end }}\n"...),
		} {
			generated(t, path, want, "kubecontroller's "+p.name, "TestAdmissionPolicyFiles")
		}
	}
}

// generated checks that the file at path is want, what test generates
// (from what); with -update it writes it.
func generated(t *testing.T, path string, want []byte, from, test string) {
	t.Helper()
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, want, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	got, err := os.ReadFile(path)
	if err != nil || !bytes.Equal(got, want) {
		t.Errorf("%s differs from %s (%v): go test ./internal/kubecontroller -run %s -update", path, from, err, test)
	}
}
