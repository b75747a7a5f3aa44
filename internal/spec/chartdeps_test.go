package spec

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// LocalChartDependencies reads what Helm's loader reads: Chart.yaml's
// dependencies (requirements.yaml's for an apiVersion v1 chart) and the
// names of the charts in charts/, folders and .tgz archives alike (the
// name in their Chart.yaml, not the file's).
func TestLocalChartDependenciesReadsFoldersArchivesAndRequirements(t *testing.T) {
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{
		"v2/Chart.yaml": "apiVersion: v2\nname: web\nversion: 1.0.0\ndependencies:\n" +
			"  - {name: common, version: 2.x.x}\n  - {name: redis, version: 19.0.0, alias: cache}\n  - {name: pg, version: 1.0.0}\n",
		"v2/charts/lib/Chart.yaml": "apiVersion: v2\nname: common\nversion: 2.1.0\n",
		"v2/charts/notes.txt":      "not a chart\n",
		"v1/Chart.yaml":            "apiVersion: v1\nname: old\nversion: 1.0.0\n",
		"v1/requirements.yaml":     "dependencies:\n  - {name: mysql, version: 1.0.0}\n",
	})
	writeChartArchive(t, filepath.Join(dir, "v2/charts/redis-19.0.0.tgz"), "redis", "apiVersion: v2\nname: redis\nversion: 19.0.0\n")

	name, declared, vendored, ok := LocalChartDependencies(filepath.Join(dir, "v2"))
	if !ok || name != "web" || len(declared) != 3 {
		t.Fatalf("= %q, %v, %v, %v", name, declared, vendored, ok)
	}
	slices.Sort(vendored)
	if !slices.Equal(vendored, []string{"common", "redis"}) {
		t.Errorf("vendored = %q, want common (a folder) and redis (an archive)", vendored)
	}
	if m := MissingChartDependencies(declared, vendored); len(m) != 1 || m[0] != (ChartDependency{Name: "pg", Version: "1.0.0"}) {
		t.Errorf("missing = %v, want pg only", m)
	}

	_, declared, vendored, ok = LocalChartDependencies(filepath.Join(dir, "v1"))
	if m := MissingChartDependencies(declared, vendored); !ok || len(m) != 1 || m[0].Name != "mysql" {
		t.Errorf("v1 chart: missing = %v, want mysql from requirements.yaml", m)
	}
	if _, _, _, ok := LocalChartDependencies(filepath.Join(dir, "nochart")); ok {
		t.Error("a folder without Chart.yaml is read as a chart")
	}
}

// writeChartArchive writes a chart archive as helm package does: the
// chart's files under a folder of its name.
func writeChartArchive(t *testing.T, file, top, chartYAML string) {
	t.Helper()
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	if err := tw.WriteHeader(&tar.Header{Name: top + "/Chart.yaml", Mode: 0o644, Size: int64(len(chartYAML))}); err != nil {
		t.Fatal(err)
	}
	if _, err := tw.Write([]byte(chartYAML)); err != nil {
		t.Fatal(err)
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := gz.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(file, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}
