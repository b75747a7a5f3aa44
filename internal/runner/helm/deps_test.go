package helm

import (
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	helmrepo "helm.sh/helm/v3/pkg/repo"

	"knit.dev/knit/internal/kubetest"
	"knit.dev/knit/internal/runner"
	"knit.dev/knit/internal/spec"
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

// With chart.dependencies: build, Helm's dependency build fetches the
// dependency from the chart repository Chart.yaml names (here on
// loopback) into a copy of the chart: the plan has its objects and the
// environment's charts/ folder stays as it was.
func TestDependencyBuildFetchesFromTheRepository(t *testing.T) {
	repo := t.TempDir()
	sub, err := loader.Load(filepath.Join("testdata", "deps", "cache"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := chartutil.Save(sub, repo); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(http.FileServer(http.Dir(repo)))
	defer srv.Close()
	idx, err := helmrepo.IndexDirectory(repo, srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	if err := idx.WriteFile(filepath.Join(repo, "index.yaml"), 0o644); err != nil {
		t.Fatal(err)
	}

	f := newFixture(t)
	web := filepath.Join(f.c.Spec.Dir, "charts", "web")
	b, err := os.ReadFile(filepath.Join("testdata", "deps", "Chart.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	b = []byte(strings.ReplaceAll(string(b), "https://charts.example.test", srv.URL))
	if err := os.WriteFile(filepath.Join(web, "Chart.yaml"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	f.c.Def.Chart.Dependencies = spec.DependenciesBuild
	p := f.plan(f.inputs("hi"), runner.PlanOptions{})
	if got := kubetest.Summary(p); !slices.Contains(got, "create ConfigMap/"+f.ns+"/web-cache") {
		t.Errorf("plan %q does not create the fetched dependency's ConfigMap", got)
	}
	if _, err := os.Stat(filepath.Join(web, "charts")); !os.IsNotExist(err) {
		t.Errorf("the environment's chart was changed: charts/ %v", err)
	}
	one, err := f.r.Fingerprint(t.Context(), f.c, f.inputs("hi"))
	if err != nil {
		t.Fatal(err)
	}
	if two, err := f.r.Fingerprint(t.Context(), f.c, f.inputs("hi")); err != nil || two != one {
		t.Errorf("fingerprints %s then %s (%v): the same build differs", one, two, err)
	}

	// The repository gone, the plan says what failed.
	srv.Close()
	if _, err := f.r.Plan(t.Context(), f.c, f.inputs("hi"), runner.PlanOptions{}); err == nil || !strings.Contains(err.Error(), "dependency build") {
		t.Errorf("plan with the repository down: %v", err)
	}
}
