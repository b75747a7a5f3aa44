// Package helm runs knit.dev/v1 `type: helm` components with the Helm SDK
// (no helm binary). A chart comes from a local path, a git repository at a
// ref, or a chart repository / OCI registry. Plans render the chart and
// diff its objects against the cluster by server-side dry-run apply (see
// kube.Client.Diff); apply installs or upgrades the release, rolling back
// (or uninstalling a first install) when it fails; destroy uninstalls.
package helm

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/cli"
	"helm.sh/helm/v3/pkg/registry"
	"helm.sh/helm/v3/pkg/release"
	"helm.sh/helm/v3/pkg/storage/driver"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/rest"

	"knit.dev/knit/internal/gitsource"
	"knit.dev/knit/internal/kube"
	"knit.dev/knit/internal/runner"
	"knit.dev/knit/internal/spec"
)

// Options configure a Runner.
type Options struct {
	// DataDir holds the plan key, the git cache and Helm's chart cache.
	DataDir string
}

// Runner drives Helm releases. It is safe for concurrent use on different components.
type Runner struct {
	dataDir string
	sealer  *kube.Sealer
	git     *gitsource.Cache
}

// New returns a helm runner.
func New(o Options) *Runner {
	return &Runner{
		dataDir: o.DataDir,
		sealer:  kube.NewSealer(o.DataDir),
		git:     &gitsource.Cache{Dir: filepath.Join(o.DataDir, "git")},
	}
}

const (
	planFile    = "helm-plan.sealed"
	outputsFile = "outputs.sealed"
)

// savedPlan is what the sealed plan file holds.
type savedPlan struct {
	Values  map[string]any `json:"values"`
	Inputs  runner.Inputs  `json:"inputs"`
	Chart   string         `json:"chart"` // digest of the chart's files
	Destroy bool           `json:"destroy,omitempty"`
}

// release is one component's release and its Helm configuration.
type helmRelease struct {
	name, ns   string
	cfg        *action.Configuration
	log        *helmLog
	rest       *rest.Config
	target     string // the cluster, for the plan's header
	cl         *kube.Client
	maxHistory int
	// timeout bounds each wait: for objects, hooks, tests and deletions.
	timeout time.Duration
	// owner is who knit records as the creator of a namespace: ENV/COMPONENT.
	owner string
}

// connect reaches the component's release; every request it makes ends by
// ctx's deadline, even those of Helm's release storage, which take no context.
func (r *Runner) connect(ctx context.Context, c runner.Component, in runner.Inputs) (*helmRelease, error) {
	rc, kctx, err := kube.Access(c.Spec, c.Def.Kubeconfig, in)
	if err != nil {
		return nil, err
	}
	rc = kube.Bounded(ctx, rc)
	ns := c.Spec.Namespace(c.Def)
	cfg, hl := &action.Configuration{}, &helmLog{}
	if err := cfg.Init(&getter{cfg: rc, ns: ns}, ns, "secret", hl.logf); err != nil {
		return nil, err
	}
	cl, err := kube.NewClient(rc)
	if err != nil {
		return nil, err
	}
	rel := &helmRelease{name: c.Def.ReleaseName(), ns: ns, cfg: cfg, log: hl, rest: rc, target: kube.Target(rc, kctx), cl: cl,
		maxHistory: c.Def.Chart.MaxHistory, timeout: 5 * time.Minute, owner: c.Env + "/" + c.Def.Name}
	if rel.maxHistory == 0 {
		rel.maxHistory = spec.DefaultMaxHistory
	}
	if c.Def.Chart.Timeout != "" {
		if rel.timeout, err = time.ParseDuration(c.Def.Chart.Timeout); err != nil {
			return nil, fmt.Errorf("chart.timeout: %w", err)
		}
	}
	return rel, nil
}

// loadChart loads the component's chart from its source.
func (r *Runner) loadChart(ctx context.Context, c runner.Component) (*chart.Chart, error) {
	ch := c.Def.Chart
	switch {
	case ch.Git != "":
		dir, _, err := r.git.Checkout(ctx, ch.Git, ch.Ref)
		if err != nil {
			return nil, err
		}
		return r.loadLocal(ctx, c, filepath.Join(dir, filepath.FromSlash(ch.Path)))
	case ch.Repo != "":
		settings := r.settings()
		opts := action.ChartPathOptions{Version: ch.Version}
		name := ch.Name
		if strings.HasPrefix(ch.Repo, "oci://") {
			rc, err := registry.NewClient(registry.ClientOptCredentialsFile(settings.RegistryConfig))
			if err != nil {
				return nil, err
			}
			install := action.NewInstall(&action.Configuration{RegistryClient: rc})
			install.SetRegistryClient(rc)
			opts = install.ChartPathOptions
			opts.Version = ch.Version
			name = strings.TrimSuffix(ch.Repo, "/")
			if ch.Name != "" {
				name += "/" + ch.Name
			}
		} else {
			opts.RepoURL = ch.Repo
		}
		p, err := opts.LocateChart(name, settings)
		if err != nil {
			return nil, err
		}
		return load(p)
	default:
		p, err := c.Spec.LocalPath(ch.Path)
		if err != nil {
			return nil, err
		}
		// Helm's loader follows symlinks: none may lead out of the environment.
		if err := spec.ContainTree(c.Spec.RootDir(), p); err != nil {
			return nil, fmt.Errorf("chart: %w", err)
		}
		return r.loadLocal(ctx, c, p)
	}
}

// settings are Helm's places for repository indexes and registry
// credentials, in knit's data folder.
func (r *Runner) settings() *cli.EnvSettings {
	settings := cli.New()
	settings.RepositoryCache = filepath.Join(r.dataDir, "helm", "repository")
	settings.RepositoryConfig = filepath.Join(r.dataDir, "helm", "repositories.yaml")
	settings.RegistryConfig = filepath.Join(r.dataDir, "helm", "registry.json")
	return settings
}

// load loads the chart at p (a folder or an archive) and refuses it, as
// Helm's install does, when a dependency its Chart.yaml declares is not in
// its charts/: Helm would render the chart without it.
func load(p string) (*chart.Chart, error) {
	ch, err := loader.Load(p)
	if err != nil {
		return nil, err
	}
	if action.CheckDependencies(ch, ch.Metadata.Dependencies) == nil {
		return ch, nil
	}
	declared := make([]spec.ChartDependency, len(ch.Metadata.Dependencies))
	for i, d := range ch.Metadata.Dependencies {
		declared[i] = spec.ChartDependency{Name: d.Name, Version: d.Version, Repository: d.Repository}
	}
	var vendored []string
	for _, d := range ch.Dependencies() {
		vendored = append(vendored, d.Name())
	}
	msg, hint := spec.ChartDependencyProblem(ch.Name(), spec.MissingChartDependencies(declared, vendored))
	return nil, fmt.Errorf("%s: %s", msg, hint)
}

// digest hashes a loaded chart's files, templates and values.
func digest(ch *chart.Chart) string {
	h := sha256.New()
	var walk func(*chart.Chart)
	walk = func(c *chart.Chart) {
		json.NewEncoder(h).Encode(c.Metadata)
		for _, f := range append(append([]*chart.File(nil), c.Templates...), c.Raw...) {
			io.WriteString(h, f.Name+"\x00")
			h.Write(f.Data)
		}
		// Helm's loader adds subcharts in map order, another at each load:
		// by name, the same files hash the same.
		deps := slices.Clone(c.Dependencies())
		slices.SortFunc(deps, func(a, b *chart.Chart) int {
			return cmp.Or(strings.Compare(a.Name(), b.Name()), strings.Compare(a.Metadata.Version, b.Metadata.Version))
		})
		for _, d := range deps {
			walk(d)
		}
	}
	walk(ch)
	return hex.EncodeToString(h.Sum(nil))
}

// Fingerprint hashes the chart, the values and the release's place.
func (r *Runner) Fingerprint(ctx context.Context, c runner.Component, in runner.Inputs) (string, error) {
	ch, err := r.loadChart(ctx, c)
	if err != nil {
		return "", err
	}
	vals, err := values(c.Spec, c.Def, in)
	if err != nil {
		return "", err
	}
	// Another cluster is another release: kube.Identity is part of it.
	cluster, err := kube.Identity(c.Spec, c.Def.Kubeconfig, in)
	if err != nil {
		return "", err
	}
	b, err := json.Marshal([]any{digest(ch), vals, c.Def.ReleaseName(), c.Spec.Namespace(c.Def), c.Def.Kubeconfig, in, cluster})
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:]), nil
}

// current returns the release's last deployed revision, or nil.
func (rel *helmRelease) current() (*release.Release, error) {
	h, err := rel.cfg.Releases.History(rel.name)
	if errors.Is(err, driver.ErrReleaseNotFound) || len(h) == 0 {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var last *release.Release
	for _, v := range h {
		if v.Info != nil && v.Info.Status == release.StatusDeployed && (last == nil || v.Version > last.Version) {
			last = v
		}
	}
	return last, nil
}

// render renders the chart as an install would, without the cluster
// storing anything. missing are the chart's crds/ CRDs the install creates
// first: the chart sees their API versions (.Capabilities) as it will at
// apply, and the server's checks skip the objects of their kinds, which it
// cannot map yet.
func (rel *helmRelease) render(ctx context.Context, ch *chart.Chart, vals map[string]any, missing []*unstructured.Unstructured) (*release.Release, error) {
	cfg := rel.cfg
	if len(missing) > 0 {
		caps, err := rel.capabilities(missing)
		if err != nil {
			return nil, err
		}
		later := *rel.cfg
		later.KubeClient, later.Capabilities = laterKindsClient{Interface: rel.cfg.KubeClient, missing: missing}, caps
		cfg = &later
	}
	inst := action.NewInstall(cfg)
	inst.ReleaseName, inst.Namespace = rel.name, rel.ns
	// "server": lookups and the ownership check of existing objects run as at apply.
	inst.DryRun, inst.DryRunOption, inst.Replace = true, "server", true
	out, err := inst.RunWithContext(ctx, ch, vals)
	if err != nil {
		return nil, fmt.Errorf("render chart: %w", err)
	}
	return out, nil
}
