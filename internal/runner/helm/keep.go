package helm

import (
	"context"
	"fmt"
	"io"
	"strings"

	"helm.sh/helm/v3/pkg/release"

	"knit.dev/knit/internal/kube"
	"knit.dev/knit/internal/runner"
)

// Why a teardown leaves an object (a kept change's reason).
const (
	keptByPolicy    = keepAnnotation + ": keep (Helm's uninstall leaves it)"
	keptCRDsFolder  = "a CRD of the chart's crds/ folder (Helm never deletes those)"
	keptNamespaceOf = "holds objects the teardown keeps (knit will no longer delete it): "
)

// keeps reports whether annotations say helm.sh/resource-policy: keep, as
// Helm reads them (case and spaces aside).
func keeps(annotations map[string]string) bool {
	return strings.EqualFold(strings.TrimSpace(annotations[keepAnnotation]), "keep")
}

// teardownSplit divides the objects of cur's manifest into those Helm's
// uninstall deletes and those it keeps (helm.sh/resource-policy: keep in
// the manifest, which is what Helm reads), and adds the CRDs of cur's
// crds/ folders that exist, which Helm never deletes.
func (rel *helmRelease) teardownSplit(ctx context.Context, cur *release.Release) (deleted []kube.Ref, kept []keptObject, err error) {
	if cur == nil {
		return nil, nil, nil
	}
	_, objs, err := objects(cur.Manifest, rel.ns, rel.cl)
	if err != nil {
		return nil, nil, err
	}
	for _, o := range objs {
		r := kube.RefOf(o)
		if !keeps(o.GetAnnotations()) {
			deleted = append(deleted, r)
			continue
		}
		if live, err := rel.cl.Get(ctx, r); err != nil {
			return nil, nil, fmt.Errorf("read %s: %w", r.Address(), err)
		} else if live != nil {
			kept = append(kept, keptObject{r, keptByPolicy})
		}
	}
	if cur.Chart == nil {
		return deleted, kept, nil
	}
	crds, err := chartCRDs(cur.Chart)
	if err != nil {
		return nil, nil, err
	}
	for _, o := range crds {
		r := kube.RefOf(o)
		if live, err := rel.cl.Get(ctx, r); err != nil {
			return nil, nil, fmt.Errorf("read %s: %w", r.Address(), err)
		} else if live != nil {
			kept = append(kept, keptObject{r, keptCRDsFolder})
		}
	}
	return deleted, kept, nil
}

// keptObject is an object a teardown leaves, and why.
type keptObject struct {
	ref kube.Ref
	why string
}

// keptIn are the addresses of the kept objects in namespace ns: while
// there are any, a namespace knit created is kept too (deleting it would
// delete them).
func keptIn(kept []keptObject, ns string) []string {
	var out []string
	for _, k := range kept {
		if k.ref.Namespace == ns {
			out = append(out, k.ref.Address())
		}
	}
	return out
}

// keptChanges are the plan's entries of kept objects.
func keptChanges(kept []keptObject) []runner.ResourceChange {
	out := make([]runner.ResourceChange, len(kept))
	for i, k := range kept {
		out[i] = runner.ResourceChange{Address: k.ref.Address(), Action: runner.ActionKeep, Reason: k.why}
	}
	return out
}

// logKept says in the component's log what the teardown left and why.
func logKept(kept []keptObject, log io.Writer) {
	for _, k := range kept {
		fmt.Fprintf(log, "kept %s: %s\n", k.ref.Address(), k.why)
	}
}
