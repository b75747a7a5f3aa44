package helm

import (
	"context"
	"fmt"
	"io"
	"strings"

	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chartutil"
	helmkube "helm.sh/helm/v3/pkg/kube"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/discovery"

	"knit.dev/knit/internal/kube"
	"knit.dev/knit/internal/runner"
)

// Helm's crds/ folder, as Helm treats it: its CustomResourceDefinitions
// are created before the templates at a release's first install (those
// that exist are left as they are), and never upgraded or deleted.

// chartCRDs are the objects of the crds/ folders of the chart and its
// subcharts. Each must be a CustomResourceDefinition: Helm would create
// whatever the folder holds, outside the release, and never update or
// delete it.
func chartCRDs(ch *chart.Chart) ([]*unstructured.Unstructured, error) {
	var out []*unstructured.Unstructured
	for _, f := range ch.CRDObjects() {
		objs, err := kube.Decode(f.File.Data, f.Filename)
		if err != nil {
			return nil, fmt.Errorf("chart %q: %w", ch.Name(), err)
		}
		for _, o := range objs {
			if o.GetKind() != "CustomResourceDefinition" {
				return nil, fmt.Errorf("chart %q: %s holds %s: a chart's crds/ folder may hold only CustomResourceDefinitions "+
					"(Helm creates them before the templates and never updates or deletes them): move it to templates/",
					ch.Name(), f.Filename, kube.RefOf(o).Address())
			}
			out = append(out, o)
		}
	}
	return out, nil
}

// installCRDs are the chart's crds/ CRDs a first install creates: none
// with chart.skipCRDs.
func (r *Runner) installCRDs(c runner.Component, ch *chart.Chart) ([]*unstructured.Unstructured, error) {
	if c.Def.Chart.SkipCRDs {
		return nil, nil
	}
	return chartCRDs(ch)
}

// missingCRDs are those of crds the cluster does not have.
func missingCRDs(ctx context.Context, cl *kube.Client, crds []*unstructured.Unstructured) ([]*unstructured.Unstructured, error) {
	var out []*unstructured.Unstructured
	for _, o := range crds {
		r := kube.RefOf(o)
		live, err := cl.Get(ctx, r)
		if err != nil {
			return nil, fmt.Errorf("read %s: %w", r.Address(), err)
		}
		if live == nil {
			out = append(out, o)
		}
	}
	return out, nil
}

// crdCreates are the plan's creations of missing CRDs.
func crdCreates(missing []*unstructured.Unstructured) []runner.ResourceChange {
	out := make([]runner.ResourceChange, len(missing))
	for i, o := range missing {
		out[i] = runner.ResourceChange{Address: kube.RefOf(o).Address(), Action: runner.ActionCreate}
	}
	return out
}

// laterKinds is the plan's note on the objects of kinds that missing
// CRDs define: the server can check them only once the apply has created
// their CRDs, so what it makes of them is known after apply.
func laterKinds(desired, missing []*unstructured.Unstructured) []string {
	var names []string
	for _, o := range desired {
		if kube.Defines(missing, o.GroupVersionKind()) {
			names = append(names, kube.RefOf(o).Address())
		}
	}
	if len(names) == 0 {
		return nil
	}
	return []string{fmt.Sprintf("%s: of kinds the chart's crds/ defines, created first by this apply: the server checks them only then (known after apply)",
		strings.Join(names, ", "))}
}

// createCRDs creates the missing CRDs by server-side apply and waits until
// they are Established (at most the release's timeout), so the templates
// that use their kinds can be applied. When they cannot be established,
// the CRDs it created are deleted again: the failed apply leaves nothing.
func (rel *helmRelease) createCRDs(ctx context.Context, missing []*unstructured.Unstructured, log io.Writer) error {
	if len(missing) == 0 {
		return nil
	}
	var created []kube.Ref
	var names []string
	err := func() error {
		for _, o := range missing {
			if _, err := rel.cl.Apply(ctx, o, false); err != nil {
				return err
			}
			created = append(created, kube.RefOf(o))
			names = append(names, o.GetName())
			fmt.Fprintf(log, "created %s (the chart's crds/)\n", kube.RefOf(o).Address())
		}
		return rel.cl.WaitEstablished(ctx, names, rel.timeout)
	}()
	if err == nil {
		return nil
	}
	for _, r := range created {
		if derr := rel.cl.Delete(context.WithoutCancel(ctx), r); derr != nil {
			return fmt.Errorf("CRDs of the chart's crds/: %w (and removing them failed: %v)", err, derr)
		}
	}
	return fmt.Errorf("CRDs of the chart's crds/: %w (the CRDs this apply created were removed)", err)
}

// capabilities are the cluster's, as Helm's install reads them, with the
// API versions the missing CRDs add: what the chart sees at apply, once
// they exist.
func (rel *helmRelease) capabilities(missing []*unstructured.Unstructured) (*chartutil.Capabilities, error) {
	dc, err := rel.cfg.RESTClientGetter.ToDiscoveryClient()
	if err != nil {
		return nil, err
	}
	v, err := dc.ServerVersion()
	if err != nil {
		return nil, fmt.Errorf("read the cluster's version: %w", err)
	}
	versions, err := action.GetVersionSet(dc)
	if err != nil && !discovery.IsGroupDiscoveryFailedError(err) {
		return nil, err
	}
	return &chartutil.Capabilities{
		APIVersions: append(versions, kube.APIVersionsOf(missing)...),
		KubeVersion: chartutil.KubeVersion{Version: v.GitVersion, Major: v.Major, Minor: v.Minor},
		HelmVersion: chartutil.DefaultCapabilities.HelmVersion,
	}, nil
}

// laterKindsClient is Helm's client for a plan's dry-run install while
// the chart's crds/ CRDs are missing: it builds the release's objects
// without those of the kinds the missing CRDs define, which the server
// cannot map yet (the plan shows them as creates checked at apply).
type laterKindsClient struct {
	helmkube.Interface
	missing []*unstructured.Unstructured
}

// Build builds the objects of r but those of kinds still to be defined.
func (c laterKindsClient) Build(r io.Reader, validate bool) (helmkube.ResourceList, error) {
	data, err := io.ReadAll(r)
	if err != nil {
		return nil, err
	}
	objs, err := kube.Decode(data, "release manifest")
	if err != nil {
		return c.Interface.Build(strings.NewReader(string(data)), validate) // Helm says what is wrong
	}
	var kept []string
	for _, o := range objs {
		if kube.Defines(c.missing, o.GroupVersionKind()) {
			continue
		}
		b, err := o.MarshalJSON()
		if err != nil {
			return nil, err
		}
		kept = append(kept, string(b))
	}
	return c.Interface.Build(strings.NewReader(strings.Join(kept, "\n---\n")), validate)
}
