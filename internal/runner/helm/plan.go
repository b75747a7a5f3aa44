package helm

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"

	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/release"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"knit.dev/knit/internal/kube"
	"knit.dev/knit/internal/runner"
)

// objects decodes a release's manifest, namespaced as Helm applies it; the
// kinds of defined (the CRDs a first install creates) are known too.
func objects(manifest, ns string, cl *kube.Client, defined ...*unstructured.Unstructured) (refs []kube.Ref, objs []*unstructured.Unstructured, err error) {
	decoded, err := kube.Decode([]byte(manifest), "release manifest")
	if err != nil {
		return nil, nil, err
	}
	cl.Prepare(decoded, ns, defined...)
	for _, o := range decoded {
		refs = append(refs, kube.RefOf(o))
	}
	return refs, decoded, nil
}

// served checks, before the server's dry run (whose error for a kind it
// does not serve names no alternative), that the cluster serves every kind
// the chart renders, hooks included, at its version (or that one of crds,
// the crds/ CRDs a first install creates, defines it): a removed API version
// fails the plan naming the object and the version served instead. The
// render is Helm's client-side one, so nothing reaches the cluster.
func (rel *helmRelease) served(ctx context.Context, ch *chart.Chart, vals map[string]any, crds []*unstructured.Unstructured) error {
	// A client-only install swaps the configuration's client and release
	// storage for stand-ins: give it a copy, not the release's own.
	cfg := *rel.cfg
	inst := action.NewInstall(&cfg)
	inst.ReleaseName, inst.Namespace = rel.name, rel.ns
	inst.DryRun, inst.ClientOnly, inst.Replace = true, true, true
	out, err := inst.RunWithContext(ctx, ch, vals)
	if err != nil {
		return nil // the server's dry run that follows says what is wrong
	}
	manifest := out.Manifest
	for _, h := range out.Hooks {
		manifest += "\n---\n" + h.Manifest
	}
	objs, err := kube.Decode([]byte(manifest), "release manifest")
	if err != nil {
		return nil
	}
	// The CRDs of its crds/ folder define kinds its templates may use.
	return rel.cl.Served(append(objs, crds...))
}

// Plan computes what applying would do. An upgrade is planned from Helm's
// own dry-run upgrade, object by object with the patches Helm would send
// (see upgradeChanges), so that plan, drift and apply agree; where Helm may
// do more than the plan can show (hooks, custom resources, charts that
// render differently each time) the plan's notes say so. A first install
// creates every object the chart renders, and the namespace when missing.
// A destroy plan deletes the release's objects, its leftover hooks and a
// namespace knit created for it.
func (r *Runner) Plan(ctx context.Context, c runner.Component, in runner.Inputs, opts runner.PlanOptions) (*runner.Plan, error) {
	rel, err := r.connect(ctx, c, in)
	if err != nil {
		return nil, err
	}
	cl := rel.cl
	cur, err := rel.current()
	if err != nil {
		return nil, err
	}
	p := &runner.Plan{Destroying: opts.Destroy, Target: rel.target}
	saved := savedPlan{Inputs: in, Destroy: opts.Destroy}
	sensitive := kube.SensitiveStrings(in, c.Sensitive)
	var changes []runner.ResourceChange
	if opts.Destroy {
		if changes, err = rel.destroyChanges(ctx, cl, cur); err != nil {
			return nil, err
		}
	} else {
		ch, err := r.loadChart(ctx, c)
		if err != nil {
			return nil, err
		}
		if saved.Values, err = values(c.Spec, c.Def, in); err != nil {
			return nil, err
		}
		saved.Chart = digest(ch)
		var crds []*unstructured.Unstructured // what a first install creates: an upgrade, nothing
		if cur == nil {
			if crds, err = r.installCRDs(c, ch); err != nil {
				return nil, err
			}
		} else if _, err := chartCRDs(ch); err != nil {
			return nil, err
		}
		// Kinds that upstream components define in this run count as served.
		coming := kube.DefinitionsOf(opts.Coming)
		if err := rel.served(ctx, ch, saved.Values, append(crds, coming...)); err != nil {
			return nil, err
		}
		if cur == nil {
			if changes, p.Notes, p.Defines, err = rel.installChanges(ctx, ch, saved.Values, crds, opts.Coming, sensitive); err != nil {
				return nil, err
			}
		} else {
			next, err := rel.dryRunUpgrade(ctx, ch, saved.Values)
			if err != nil {
				return nil, err
			}
			if changes, p.Notes, err = rel.upgradeChanges(ctx, cur, next, sensitive); err != nil {
				return nil, err
			}
			if _, objs, err := objects(next.Manifest, rel.ns, cl); err == nil {
				p.Defines = cl.NewKinds(objs)
			}
			if rc := releaseChange(rel, cur, next, sensitive, c.Sensitive); rc != nil {
				changes = append([]runner.ResourceChange{*rc}, changes...)
			}
			if again, err := rel.dryRunUpgrade(ctx, ch, saved.Values); err == nil && again.Manifest != next.Manifest {
				p.Notes = append(p.Notes, "the chart renders differently each time (random or time-based values): the apply renders it again, so its changes may differ from these")
			}
			if len(ch.CRDObjects()) > 0 {
				p.Notes = append(p.Notes, "Helm installs the CRDs of the chart's crds/ folder at the first install only: an upgrade neither changes nor shows them")
			}
			if len(changes) > 0 {
				p.Notes = append(p.Notes, hookNotes(next.Hooks, rel.ns, rel.namespaced, release.HookPreUpgrade, release.HookPostUpgrade)...)
			}
		}
		if c.Def.Chart.Test && len(changes) > 0 {
			p.Notes = append(p.Notes, "the chart's tests (helm test) run after the apply; a failing test fails it")
		}
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

// installChanges are what a first install creates: the namespace when
// missing, the missing CRDs of crds (the chart's crds/), then the objects
// the chart renders, dry-run applied by the server but those of kinds the
// missing CRDs or upstream components (coming) define (see laterKinds);
// the plan's notes; and the kinds its CRDs define that the cluster does
// not serve yet.
func (rel *helmRelease) installChanges(ctx context.Context, ch *chart.Chart, vals map[string]any, crds []*unstructured.Unstructured, coming []runner.Kind, sensitive []string) ([]runner.ResourceChange, []string, []runner.Kind, error) {
	missing, err := missingCRDs(ctx, rel.cl, crds)
	if err != nil {
		return nil, nil, nil, err
	}
	later := append(append([]*unstructured.Unstructured(nil), missing...), kube.DefinitionsOf(coming)...)
	next, err := rel.render(ctx, ch, vals, later)
	if err != nil {
		return nil, nil, nil, err
	}
	_, desired, err := objects(next.Manifest, rel.ns, rel.cl, later...)
	if err != nil {
		return nil, nil, nil, err
	}
	changes, err := rel.cl.Diff(ctx, desired, nil, sensitive...)
	if err != nil {
		return nil, nil, nil, err
	}
	changes = append(crdCreates(missing), changes...)
	ns, err := rel.namespaceChange(ctx)
	if err != nil {
		return nil, nil, nil, err
	}
	if ns != nil {
		changes = append([]runner.ResourceChange{*ns}, changes...)
	}
	notes := append(laterKinds(desired, missing), kube.ComingNotes(desired, coming)...)
	notes = append(notes, hookNotes(next.Hooks, rel.ns, rel.namespaced, release.HookPreInstall, release.HookPostInstall)...)
	return changes, notes, rel.cl.NewKinds(append(missing, desired...)), nil
}

// releaseChange is the change of the release itself when its chart or
// values change (the upgrade stores a new revision and runs its hooks even
// when no object changes), its values shown old → new; or nil. Values set
// by a sensitive variable (its name is their path) are masked, old ones too.
func releaseChange(rel *helmRelease, cur, next *release.Release, sensitive []string, sensitiveVars map[string]bool) *runner.ResourceChange {
	old := map[string]any{"values": effective(cur), "chart": chartName(cur)}
	now := map[string]any{"values": effective(next), "chart": chartName(next)}
	vc := kube.ValueChanges(jsonRoundTrip(old), jsonRoundTrip(now), kube.DiffOptions{Sensitive: sensitive})
	if len(vc) == 0 {
		return nil
	}
	for i := range vc {
		vc[i].Path = strings.TrimPrefix(vc[i].Path, "values.")
		for name := range sensitiveVars {
			if vc[i].Path == name || strings.HasPrefix(vc[i].Path, name+".") || strings.HasPrefix(vc[i].Path, name+"[") {
				vc[i].Old, vc[i].New, vc[i].Sensitive = kube.Masked, kube.Masked, true
			}
		}
	}
	return &runner.ResourceChange{Address: "Release/" + rel.ns + "/" + rel.name, Action: runner.ActionUpdate,
		Attributes: kube.Paths(vc), Changes: vc}
}

// effective are the values a release renders with: the chart's defaults
// under the given values.
func effective(r *release.Release) map[string]any {
	if r.Chart == nil {
		return r.Config
	}
	v, err := chartutil.CoalesceValues(r.Chart, r.Config)
	if err != nil {
		return r.Config
	}
	return v
}

func chartName(r *release.Release) string {
	if r.Chart == nil || r.Chart.Metadata == nil {
		return ""
	}
	return r.Chart.Metadata.Name + "-" + r.Chart.Metadata.Version
}

// jsonRoundTrip gives values the types a diff compares (numbers as JSON
// numbers), whether they came from storage or from the spec.
func jsonRoundTrip(m map[string]any) map[string]any {
	b, err := json.Marshal(m)
	if err != nil {
		return m
	}
	var out map[string]any
	if err := json.Unmarshal(b, &out); err != nil {
		return m
	}
	return out
}
