package helm

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/downloader"
	helmgetter "helm.sh/helm/v3/pkg/getter"
	"helm.sh/helm/v3/pkg/registry"
	helmrepo "helm.sh/helm/v3/pkg/repo"

	"knit.dev/knit/internal/runner"
	"knit.dev/knit/internal/spec"
)

// loadLocal loads the chart in folder p; with chart.dependencies: build,
// Helm's dependency build first fetches what its Chart.lock pins (or, with
// no lock, what Chart.yaml's ranges resolve to) from the repositories and
// OCI registries Chart.yaml names, into a copy in the component's work
// folder: the environment's files are never changed.
func (r *Runner) loadLocal(ctx context.Context, c runner.Component, p string) (*chart.Chart, error) {
	if c.Def.Chart.Dependencies != spec.DependenciesBuild {
		return load(p)
	}
	if err := os.MkdirAll(c.WorkDir, 0o700); err != nil {
		return nil, err
	}
	tmp, err := os.MkdirTemp(c.WorkDir, "chart-build-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	dst := filepath.Join(tmp, filepath.Base(p))
	if err := os.CopyFS(dst, os.DirFS(p)); err != nil {
		return nil, fmt.Errorf("chart: copy for the dependency build: %w", err)
	}
	if err := r.buildDependencies(ctx, dst); err != nil {
		return nil, err
	}
	// Without a lock, Helm writes one stamped with the time: the chart is
	// what was fetched, not when, so it goes (the fingerprint holds still).
	if _, err := os.Stat(filepath.Join(p, "Chart.lock")); os.IsNotExist(err) {
		if err := os.Remove(filepath.Join(dst, "Chart.lock")); err != nil && !os.IsNotExist(err) {
			return nil, err
		}
	}
	return load(dst)
}

// buildDependencies runs Helm's dependency build in the chart folder dir.
func (r *Runner) buildDependencies(ctx context.Context, dir string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	settings := r.settings()
	rc, err := registry.NewClient(registry.ClientOptCredentialsFile(settings.RegistryConfig))
	if err != nil {
		return err
	}
	// Helm updates the indexes of the repositories it names, from a
	// repositories file that must exist: knit's own, empty (Chart.yaml's
	// URLs are used as they are).
	if _, err := os.Stat(settings.RepositoryConfig); os.IsNotExist(err) {
		if err := os.MkdirAll(filepath.Dir(settings.RepositoryConfig), 0o700); err != nil {
			return err
		}
		if err := helmrepo.NewFile().WriteFile(settings.RepositoryConfig, 0o600); err != nil {
			return err
		}
	}
	m := &downloader.Manager{Out: io.Discard, ChartPath: dir, Getters: helmgetter.All(settings), RegistryClient: rc,
		RepositoryConfig: settings.RepositoryConfig, RepositoryCache: settings.RepositoryCache}
	if err := m.Build(); err != nil {
		return fmt.Errorf("chart.dependencies build (Helm's dependency build): %w", err)
	}
	return nil
}
