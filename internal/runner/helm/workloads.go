package helm

import (
	"context"
	"fmt"

	"knit.dev/knit/internal/kube"
	"knit.dev/knit/internal/runner"
)

// Workloads looks at the workloads of the release's deployed revision: the
// objects of its manifest (hooks are not part of it), in the release's
// namespace unless they name another (see runner.WorkloadReader).
func (r *Runner) Workloads(ctx context.Context, c runner.Component, in runner.Inputs, objects []string) (runner.Workloads, error) {
	rel, err := r.connect(ctx, c, in)
	if err != nil {
		return runner.Workloads{}, err
	}
	cur, err := rel.current()
	if err != nil {
		return runner.Workloads{}, fmt.Errorf("release %s: %w", rel.name, err)
	}
	if cur == nil {
		return runner.Workloads{}, fmt.Errorf("release %s has no deployed revision in %s", rel.name, rel.ns)
	}
	objs, err := kube.Decode([]byte(cur.Manifest), "release "+rel.name)
	if err != nil {
		return runner.Workloads{}, err
	}
	owned := make([]kube.Ref, len(objs))
	for i, o := range objs {
		if owned[i] = kube.RefOf(o); owned[i].Namespace == "" {
			owned[i].Namespace = rel.ns // every workload kind is namespaced
		}
	}
	return rel.cl.Workloads(ctx, owned, objects, rel.ns)
}
