package helm

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"knit.dev/knit/internal/kubetest"
	"knit.dev/knit/internal/runner"
)

// A dependency the chart's Chart.yaml declares and its charts/ lacks fails
// the plan, naming it, its version and how to vendor it, whatever its
// condition says (Helm's install refuses such a chart); vendored into
// charts/, the chart plans with the dependency's objects.
func TestMissingDependencyFailsThePlan(t *testing.T) {
	f := newFixture(t)
	web := filepath.Join(f.c.Spec.Dir, "charts", "web")
	b, err := os.ReadFile(filepath.Join("testdata", "deps", "Chart.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(web, "Chart.yaml"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = f.r.Plan(t.Context(), f.c, f.inputs("hi"), runner.PlanOptions{})
	want := `chart "web": dependency "cache" 0.2.0 (https://charts.example.test) found in Chart.yaml, but missing in its charts/ directory`
	if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "helm dependency build") {
		t.Fatalf("plan err = %v, want it to name the dependency and how to vendor it", err)
	}
	if _, err := f.r.Fingerprint(t.Context(), f.c, f.inputs("hi")); err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("fingerprint err = %v", err)
	}

	if err := os.CopyFS(filepath.Join(web, "charts", "cache"), os.DirFS(filepath.Join("testdata", "deps", "cache"))); err != nil {
		t.Fatal(err)
	}
	p := f.plan(f.inputs("hi"), runner.PlanOptions{})
	if got := kubetest.Summary(p); !slices.Contains(got, "create ConfigMap/"+f.ns+"/web-cache") {
		t.Errorf("plan %q does not create the vendored dependency's ConfigMap", got)
	}
}
