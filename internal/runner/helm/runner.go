// Package helm runs knit.dev/v1 `type: helm` components with the Helm SDK
// (no helm binary). A chart comes from a local path, a git repository at a
// ref, or a chart repository / OCI registry. Plans render the chart and
// diff its objects against the cluster by server-side dry-run apply (see
// kube.Client.Diff); apply installs or upgrades the release, rolling back
// (or uninstalling a first install) when it fails; destroy uninstalls.
package helm

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
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
	name, ns string
	cfg      *action.Configuration
	rest     *rest.Config
	target   string // the cluster, for the plan's header
}

func (r *Runner) connect(c runner.Component, in runner.Inputs) (*helmRelease, error) {
	rc, kctx, err := kube.Access(c.Spec, c.Def.Kubeconfig, in)
	if err != nil {
		return nil, err
	}
	ns := c.Spec.Namespace(c.Def)
	cfg := &action.Configuration{}
	if err := cfg.Init(&getter{cfg: rc, ns: ns}, ns, "secret", func(string, ...any) {}); err != nil {
		return nil, err
	}
	return &helmRelease{name: c.Def.ReleaseName(), ns: ns, cfg: cfg, rest: rc, target: kube.Target(rc, kctx)}, nil
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
		return loader.Load(filepath.Join(dir, filepath.FromSlash(ch.Path)))
	case ch.Repo != "":
		settings := cli.New()
		settings.RepositoryCache = filepath.Join(r.dataDir, "helm", "repository")
		settings.RepositoryConfig = filepath.Join(r.dataDir, "helm", "repositories.yaml")
		settings.RegistryConfig = filepath.Join(r.dataDir, "helm", "registry.json")
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
		return loader.Load(p)
	default:
		p, err := c.Spec.LocalPath(ch.Path)
		if err != nil {
			return nil, err
		}
		// Helm's loader follows symlinks: none may lead out of the environment.
		if err := spec.ContainTree(c.Spec.RootDir(), p); err != nil {
			return nil, fmt.Errorf("chart: %w", err)
		}
		return loader.Load(p)
	}
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
		for _, d := range c.Dependencies() {
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

// render renders the chart as an install or upgrade would, without the cluster storing anything.
func (rel *helmRelease) render(ctx context.Context, ch *chart.Chart, vals map[string]any, upgrade bool) (string, error) {
	inst := action.NewInstall(rel.cfg)
	inst.ReleaseName, inst.Namespace = rel.name, rel.ns
	inst.DryRun, inst.DryRunOption, inst.Replace, inst.IsUpgrade = true, "client", true, upgrade
	inst.DisableHooks = true
	out, err := inst.RunWithContext(ctx, ch, vals)
	if err != nil {
		return "", fmt.Errorf("render chart: %w", err)
	}
	return out.Manifest, nil
}

func objects(manifest, ns string, cl *kube.Client) (refs []kube.Ref, objs []*unstructured.Unstructured, err error) {
	decoded, err := kube.Decode([]byte(manifest), "release manifest")
	if err != nil {
		return nil, nil, err
	}
	cl.Prepare(decoded, ns)
	for _, o := range decoded {
		refs = append(refs, kube.RefOf(o))
	}
	return refs, decoded, nil
}

// Plan renders the chart and diffs it against the cluster; objects of the
// deployed release that the chart no longer renders are deletions. A
// destroy plan deletes the release's objects.
func (r *Runner) Plan(ctx context.Context, c runner.Component, in runner.Inputs, opts runner.PlanOptions) (*runner.Plan, error) {
	rel, err := r.connect(c, in)
	if err != nil {
		return nil, err
	}
	cl, err := kube.NewClient(rel.rest)
	if err != nil {
		return nil, err
	}
	cur, err := rel.current()
	if err != nil {
		return nil, err
	}
	var previous []kube.Ref
	if cur != nil {
		if previous, _, err = objects(cur.Manifest, rel.ns, cl); err != nil {
			return nil, err
		}
	}
	p := &runner.Plan{Destroying: opts.Destroy, Target: rel.target}
	saved := savedPlan{Inputs: in, Destroy: opts.Destroy}
	var desired []*unstructured.Unstructured
	if !opts.Destroy {
		ch, err := r.loadChart(ctx, c)
		if err != nil {
			return nil, err
		}
		if saved.Values, err = values(c.Spec, c.Def, in); err != nil {
			return nil, err
		}
		saved.Chart = digest(ch)
		manifest, err := rel.render(ctx, ch, saved.Values, cur != nil)
		if err != nil {
			return nil, err
		}
		if _, desired, err = objects(manifest, rel.ns, cl); err != nil {
			return nil, err
		}
	}
	changes, err := cl.Diff(ctx, desired, previous)
	if err != nil {
		return nil, err
	}
	kube.Summarise(p, changes)
	if cur == nil && !opts.Destroy && len(changes) == 0 {
		// A chart that renders nothing still becomes a release.
		p.Add, p.Resources = 1, []runner.ResourceChange{{Address: "Release/" + rel.ns + "/" + rel.name, Action: runner.ActionCreate}}
	}
	if p.HasChanges() && !opts.Destroy {
		p.OutputChanges = []string{"revision"}
	}
	p.File = filepath.Join(c.WorkDir, planFile)
	if p.Checksum, err = r.sealer.WriteJSON(p.File, saved); err != nil {
		return nil, err
	}
	return p, nil
}

// Apply installs or upgrades the release with the planned values. A failed
// install is uninstalled and a failed upgrade rolled back, and the error
// says what Kubernetes refused.
func (r *Runner) Apply(ctx context.Context, c runner.Component, p *runner.Plan) (runner.Outputs, error) {
	var saved savedPlan
	if err := r.sealer.ReadJSON(p.File, p.Checksum, &saved); err != nil {
		return nil, err
	}
	if saved.Destroy {
		return runner.Outputs{}, r.Destroy(ctx, c, saved.Inputs)
	}
	ch, err := r.loadChart(ctx, c)
	if err != nil {
		return nil, err
	}
	if digest(ch) != saved.Chart {
		return nil, errors.New("the chart changed since the plan was made: plan again")
	}
	rel, err := r.connect(c, saved.Inputs)
	if err != nil {
		return nil, err
	}
	cur, err := rel.current()
	if err != nil {
		return nil, err
	}
	timeout := 5 * time.Minute
	if c.Def.Chart.Timeout != "" {
		if timeout, err = time.ParseDuration(c.Def.Chart.Timeout); err != nil {
			return nil, err
		}
	}
	var out *release.Release
	if cur == nil {
		// A release that failed before has history but nothing deployed: start over.
		if h, _ := rel.cfg.Releases.History(rel.name); len(h) > 0 {
			un := action.NewUninstall(rel.cfg)
			un.Timeout = timeout
			if _, err := un.Run(rel.name); err != nil {
				return nil, fmt.Errorf("remove failed release %s: %w", rel.name, err)
			}
		}
		inst := action.NewInstall(rel.cfg)
		inst.ReleaseName, inst.Namespace, inst.CreateNamespace = rel.name, rel.ns, true
		inst.Wait, inst.Timeout = c.Def.Chart.Wait, timeout
		out, err = inst.RunWithContext(ctx, ch, saved.Values)
		if err != nil {
			fmt.Fprintf(c.Log, "install of %s failed: %v\n", rel.name, err)
			un := action.NewUninstall(rel.cfg)
			un.Timeout = timeout
			if _, uerr := un.Run(rel.name); uerr != nil && !errors.Is(uerr, driver.ErrReleaseNotFound) {
				return nil, fmt.Errorf("install %s: %w (and removing it failed: %v)", rel.name, err, uerr)
			}
			return nil, fmt.Errorf("install %s: %w (rolled back: the release was removed)", rel.name, err)
		}
	} else {
		up := action.NewUpgrade(rel.cfg)
		up.Namespace, up.Wait, up.Timeout = rel.ns, c.Def.Chart.Wait, timeout
		out, err = up.RunWithContext(ctx, rel.name, ch, saved.Values)
		if err != nil {
			fmt.Fprintf(c.Log, "upgrade of %s failed: %v\n", rel.name, err)
			rb := action.NewRollback(rel.cfg)
			rb.Version, rb.Timeout, rb.Wait = cur.Version, timeout, c.Def.Chart.Wait
			if rerr := rb.Run(rel.name); rerr != nil {
				return nil, fmt.Errorf("upgrade %s: %w (and rolling back failed: %v)", rel.name, err, rerr)
			}
			return nil, fmt.Errorf("upgrade %s: %w (rolled back to revision %d)", rel.name, err, cur.Version)
		}
	}
	fmt.Fprintf(c.Log, "release %s in %s: revision %d, %s\n", out.Name, out.Namespace, out.Version, out.Info.Status)
	outs, err := r.readOutputs(ctx, c, rel, out)
	if err != nil {
		return nil, err
	}
	return outs, kube.SaveOutputs(r.sealer, filepath.Join(c.WorkDir, outputsFile), outs)
}

func (r *Runner) readOutputs(ctx context.Context, c runner.Component, rel *helmRelease, out *release.Release) (runner.Outputs, error) {
	cl, err := kube.NewClient(rel.rest)
	if err != nil {
		return nil, err
	}
	outs, err := kube.DeclaredOutputs(ctx, cl, c.Def, rel.ns)
	if err != nil {
		return nil, err
	}
	outs["release"] = runner.Output{Value: out.Name}
	outs["namespace"] = runner.Output{Value: out.Namespace}
	outs["revision"] = runner.Output{Value: int64(out.Version)}
	outs["status"] = runner.Output{Value: out.Info.Status.String()}
	return outs, nil
}

// Destroy uninstalls the release; one that does not exist is gone already.
func (r *Runner) Destroy(ctx context.Context, c runner.Component, in runner.Inputs) error {
	rel, err := r.connect(c, in)
	if err != nil {
		return err
	}
	un := action.NewUninstall(rel.cfg)
	un.Timeout = 5 * time.Minute
	if _, err := un.Run(rel.name); err != nil && !errors.Is(err, driver.ErrReleaseNotFound) {
		return fmt.Errorf("uninstall %s: %w", rel.name, err)
	}
	fmt.Fprintf(c.Log, "uninstalled %s from %s\n", rel.name, rel.ns)
	if err := os.Remove(filepath.Join(c.WorkDir, outputsFile)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	return nil
}

// Outputs returns the outputs recorded by the last apply.
func (r *Runner) Outputs(_ context.Context, c runner.Component) (runner.Outputs, error) {
	return kube.LoadOutputs(r.sealer, filepath.Join(c.WorkDir, outputsFile))
}
