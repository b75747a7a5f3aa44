package spec

import (
	"archive/tar"
	"compress/gzip"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"gopkg.in/yaml.v3"
)

// Chart dependencies: a chart's Chart.yaml (requirements.yaml for an
// apiVersion v1 chart) lists the charts it needs, and Helm reads them only
// from its charts/ folder, as folders or .tgz archives. Knit never fetches
// them. A declared dependency with no chart of its name in charts/ is an
// error, whatever its condition or tags say, as Helm's
// action.CheckDependencies has it; this file finds such dependencies on
// disk, for knit validate, and says how to fix them, for the helm runner
// too.

// ChartDependency is one dependency a chart declares.
type ChartDependency struct {
	Name       string `yaml:"name"`
	Version    string `yaml:"version"`
	Repository string `yaml:"repository"`
}

// MissingChartDependencies returns the dependencies in declared that no
// chart in vendored (the names of the charts in charts/) is named after.
func MissingChartDependencies(declared []ChartDependency, vendored []string) []ChartDependency {
	var missing []ChartDependency
	for _, d := range declared {
		if !contains(vendored, d.Name) {
			missing = append(missing, d)
		}
	}
	return missing
}

// ChartDependencyProblem says what is wrong with chart (its name) when it
// lacks the dependencies missing, and how to fix it.
func ChartDependencyProblem(chart string, missing []ChartDependency) (msg, hint string) {
	names := make([]string, len(missing))
	for i, d := range missing {
		names[i] = fmt.Sprintf("%q", d.Name)
		if d.Version != "" {
			names[i] += " " + d.Version
		}
		if d.Repository != "" {
			names[i] += " (" + d.Repository + ")"
		}
	}
	msg = fmt.Sprintf("chart %q: dependency %s found in Chart.yaml, but missing in its charts/ directory",
		chart, strings.Join(names, ", "))
	hint = "vendor each dependency into the chart's charts/ folder and commit it with Chart.lock " +
		"(helm dependency build, where there is network), or set chart.dependencies: build to have knit fetch them at each plan"
	return msg, hint
}

// chartDependencies reports the dependencies a local chart declares and
// its charts/ folder lacks (ChartDependencyProblem).
func (v *validator) chartDependencies(p string, ch *Chart) {
	if ch.Repo != "" || ch.Path == "" || ch.Dependencies == DependenciesBuild {
		return
	}
	full, err := v.env.LocalPath(ch.Path)
	if err != nil || ContainTree(v.env.RootDir(), full) != nil {
		return // localPath said so; the runner refuses a link out
	}
	name, declared, vendored, ok := LocalChartDependencies(full)
	if !ok {
		return
	}
	if missing := MissingChartDependencies(declared, vendored); len(missing) > 0 {
		msg, hint := ChartDependencyProblem(name, missing)
		v.err(p, "", msg, hint)
	}
	for _, bad := range lockMismatches(full) {
		v.err(p, "", fmt.Sprintf("chart %q: %s", name, bad),
			"vendor the versions Chart.lock pins (helm dependency build, where there is network) and commit charts/ with it")
	}
}

// lockMismatches says which charts of charts/ differ from the versions
// the chart's Chart.lock pins (none without a lock).
func lockMismatches(dir string) []string {
	var lock struct {
		Dependencies []ChartDependency `yaml:"dependencies"`
	}
	if !readYAML(filepath.Join(dir, "Chart.lock"), &lock) {
		return nil
	}
	have := map[string][]string{}
	for _, c := range vendoredCharts(dir) {
		have[c.Name] = append(have[c.Name], c.Version)
	}
	var out []string
	for _, d := range lock.Dependencies {
		if got, ok := have[d.Name]; ok && !contains(got, d.Version) {
			out = append(out, fmt.Sprintf("charts/ holds %s %s, but Chart.lock pins %s", d.Name, strings.Join(got, ", "), d.Version))
		}
	}
	return out
}

// chartMeta is what Chart.yaml (or requirements.yaml) says of dependencies.
type chartMeta struct {
	APIVersion   string            `yaml:"apiVersion"`
	Name         string            `yaml:"name"`
	Version      string            `yaml:"version"`
	Dependencies []ChartDependency `yaml:"dependencies"`
}

// LocalChartDependencies reads the chart in folder dir: its name, the
// dependencies it declares and the names of the charts in its charts/
// folder. ok is false when dir holds no readable Chart.yaml.
func LocalChartDependencies(dir string) (name string, declared []ChartDependency, vendored []string, ok bool) {
	var m chartMeta
	if !readYAML(filepath.Join(dir, "Chart.yaml"), &m) {
		return "", nil, nil, false
	}
	if m.APIVersion == "v1" {
		var req chartMeta
		if readYAML(filepath.Join(dir, "requirements.yaml"), &req) {
			m.Dependencies = req.Dependencies
		}
	}
	for _, c := range vendoredCharts(dir) {
		vendored = append(vendored, c.Name)
	}
	return m.Name, m.Dependencies, vendored, true
}

// vendoredCharts are the charts in dir's charts/ folder, folders and
// archives: each one's name and version.
func vendoredCharts(dir string) []ChartDependency {
	var out []ChartDependency
	entries, _ := os.ReadDir(filepath.Join(dir, "charts"))
	for _, e := range entries {
		p := filepath.Join(dir, "charts", e.Name())
		var sub chartMeta
		switch {
		case e.IsDir() && readYAML(filepath.Join(p, "Chart.yaml"), &sub):
		case !e.IsDir() && strings.HasSuffix(e.Name(), ".tgz"):
			var ok bool
			if sub, ok = archivedChart(p); !ok {
				continue
			}
		default:
			continue
		}
		out = append(out, ChartDependency{Name: sub.Name, Version: sub.Version})
	}
	return out
}

// readYAML decodes file into v; false when it cannot be read or parsed.
func readYAML(file string, v any) bool {
	b, err := os.ReadFile(file)
	return err == nil && yaml.Unmarshal(b, v) == nil
}

// archivedChart is the Chart.yaml of a chart archive's top folder.
func archivedChart(file string) (chartMeta, bool) {
	var m chartMeta
	f, err := os.Open(file)
	if err != nil {
		return m, false
	}
	defer f.Close()
	gz, err := gzip.NewReader(f)
	if err != nil {
		return m, false
	}
	tr := tar.NewReader(gz)
	for {
		h, err := tr.Next()
		if err != nil {
			return m, false
		}
		if parts := strings.Split(strings.TrimPrefix(h.Name, "./"), "/"); len(parts) == 2 && parts[1] == "Chart.yaml" {
			b, err := io.ReadAll(io.LimitReader(tr, 1<<20))
			if err != nil || yaml.Unmarshal(b, &m) != nil {
				return m, false
			}
			return m, true
		}
	}
}
