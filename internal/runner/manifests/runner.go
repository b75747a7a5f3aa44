// Package manifests runs knit.dev/v1 `type: manifests` components: a file or
// folder of Kubernetes objects (or a kustomization), with ${var.NAME}
// replaced by the component's variables, server-side applied with field
// manager "knit". An inventory of the objects applied (names only) is kept in
// the work dir, so an object removed from the files is pruned on the next
// apply; destroy deletes the inventory in reverse kind order (custom
// resources first, CRDs after them, namespaces last).
package manifests

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"knit.dev/knit/internal/kube"
	"knit.dev/knit/internal/runner"
	"knit.dev/knit/internal/spec"
)

// Options configure a Runner.
type Options struct {
	// DataDir holds the key that seals plan and output files.
	DataDir string
}

// Runner applies manifests components. It is safe for concurrent use on
// different components.
type Runner struct {
	sealer *kube.Sealer
}

// New returns a manifests runner.
func New(o Options) *Runner {
	return &Runner{sealer: kube.NewSealer(o.DataDir)}
}

const (
	planFile    = "manifests-plan.sealed"
	outputsFile = "outputs.sealed"
)

// savedPlan is what a plan file holds: the exact objects to apply, and the
// inputs (for a destroy plan and the outputs' cluster access).
type savedPlan struct {
	Objects []map[string]any `json:"objects"`
	Inputs  runner.Inputs    `json:"inputs"`
	Destroy bool             `json:"destroy,omitempty"`
}

// Fingerprint hashes the files' objects after substitution, the namespace,
// the cluster access and the cluster it reaches (kube.Identity), without
// contacting the cluster.
func (r *Runner) Fingerprint(_ context.Context, c runner.Component, in runner.Inputs) (string, error) {
	objs, err := r.render(c, in)
	if err != nil {
		return "", err
	}
	cluster, err := kube.Identity(c.Spec, c.Def.Kubeconfig, in)
	if err != nil {
		return "", err
	}
	b, err := json.Marshal(struct {
		Objects []*unstructured.Unstructured
		NS      string
		Access  any
		In      runner.Inputs
		Cluster string
	}{objs, c.Spec.Namespace(c.Def), c.Def.Kubeconfig, in, cluster})
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:]), nil
}

func (r *Runner) render(c runner.Component, in runner.Inputs) ([]*unstructured.Unstructured, error) {
	path, err := c.Spec.LocalPath(c.Def.Manifests.Path)
	if err != nil {
		return nil, err
	}
	// Files are read through symlinks: none may lead out of the environment.
	if err := spec.ContainTree(c.Spec.RootDir(), path); err != nil {
		return nil, fmt.Errorf("manifests: %w", err)
	}
	return render(path, in)
}

func (r *Runner) client(ctx context.Context, c runner.Component, in runner.Inputs) (*kube.Client, error) {
	cl, _, err := r.connect(ctx, c, in)
	return cl, err
}

// connect is client, and the cluster it reaches for the plan's header.
// connect's requests end by ctx's deadline (discovery's take no context).
func (r *Runner) connect(ctx context.Context, c runner.Component, in runner.Inputs) (*kube.Client, string, error) {
	cfg, kctx, err := kube.Access(c.Spec, c.Def.Kubeconfig, in)
	if err != nil {
		return nil, "", err
	}
	cfg = kube.Bounded(ctx, cfg)
	cl, err := kube.NewClient(cfg)
	return cl, kube.Target(cfg, kctx), err
}

// desired renders the objects and completes them: namespaces set, and the
// component's namespace added when it does not exist yet (or knit created
// it before), so that knit owns exactly the namespaces it created. The
// kinds coming from upstream components count as served.
func (r *Runner) desired(ctx context.Context, c runner.Component, cl *kube.Client, in runner.Inputs, inv kube.Inventory, coming []runner.Kind) ([]*unstructured.Unstructured, error) {
	objs, err := r.render(c, in)
	if err != nil {
		return nil, err
	}
	// A kind the cluster does not serve (a removed API version, a CRD
	// not applied) fails the plan here, before a namespace is guessed.
	defined := kube.DefinitionsOf(coming)
	if err := cl.Served(append(append([]*unstructured.Unstructured(nil), objs...), defined...)); err != nil {
		return nil, err
	}
	ns := c.Spec.Namespace(c.Def)
	cl.Prepare(objs, ns, defined...)
	uses, declared := false, false
	for _, o := range objs {
		uses = uses || o.GetNamespace() == ns
		declared = declared || (o.GetKind() == "Namespace" && o.GetName() == ns)
	}
	if uses && !declared {
		nsRef := kube.Ref{APIVersion: "v1", Kind: "Namespace", Name: ns}
		owned := len(inv.Missing([]kube.Ref{nsRef})) < len(inv.Objects)
		live, err := cl.Get(ctx, nsRef)
		if err != nil {
			return nil, err
		}
		if live == nil || owned {
			o := &unstructured.Unstructured{}
			o.SetAPIVersion("v1")
			o.SetKind("Namespace")
			o.SetName(ns)
			objs = append([]*unstructured.Unstructured{o}, objs...)
		}
	}
	return objs, nil
}

// Plan diffs the objects against the cluster (see kube.Client.Diff); a
// destroy plan deletes every object in the inventory that still exists.
func (r *Runner) Plan(ctx context.Context, c runner.Component, in runner.Inputs, opts runner.PlanOptions) (*runner.Plan, error) {
	cl, target, err := r.connect(ctx, c, in)
	if err != nil {
		return nil, err
	}
	inv, err := kube.LoadInventory(c.WorkDir)
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(c.Log, "cluster: %s\n", target)
	p := &runner.Plan{Destroying: opts.Destroy, Target: target}
	saved := savedPlan{Inputs: in, Destroy: opts.Destroy}
	var changes []runner.ResourceChange
	if opts.Destroy {
		changes, err = cl.Diff(ctx, nil, inv.Objects)
	} else {
		var objs []*unstructured.Unstructured
		if objs, err = r.desired(ctx, c, cl, in, inv, opts.Coming); err != nil {
			return nil, err
		}
		p.Notes, p.Defines = kube.ComingNotes(objs, opts.Coming), cl.NewKinds(objs)
		for _, o := range objs {
			saved.Objects = append(saved.Objects, o.Object)
		}
		changes, err = cl.Diff(ctx, objs, inv.Objects, kube.SensitiveStrings(in, c.Sensitive)...)
	}
	if err != nil {
		return nil, err
	}
	kube.Summarise(p, changes)
	if p.HasChanges() && !opts.Destroy {
		for _, o := range c.Def.Outputs {
			p.OutputChanges = append(p.OutputChanges, o.Name)
		}
	}
	p.File = filepath.Join(c.WorkDir, planFile)
	if p.Checksum, err = r.sealer.WriteJSON(p.File, saved); err != nil {
		return nil, err
	}
	return p, nil
}

// Apply applies exactly the planned objects in kind order, then prunes what
// the inventory holds and the plan does not, and returns the outputs. The
// inventory is widened before anything is applied, so a crash midway
// leaves every object knit may have created on record.
func (r *Runner) Apply(ctx context.Context, c runner.Component, p *runner.Plan) (runner.Outputs, error) {
	var saved savedPlan
	if err := r.sealer.ReadJSON(p.File, p.Checksum, &saved); err != nil {
		return nil, err
	}
	if saved.Destroy {
		return runner.Outputs{}, r.Destroy(ctx, c, saved.Inputs)
	}
	cl, err := r.client(ctx, c, saved.Inputs)
	if err != nil {
		return nil, err
	}
	inv, err := kube.LoadInventory(c.WorkDir)
	if err != nil {
		return nil, err
	}
	objs := make([]*unstructured.Unstructured, len(saved.Objects))
	refs := make([]kube.Ref, len(saved.Objects))
	for i, m := range saved.Objects {
		objs[i] = &unstructured.Unstructured{Object: m}
		refs[i] = kube.RefOf(objs[i])
	}
	if err := (kube.Inventory{Objects: kube.Union(inv.Objects, refs)}).Save(c.WorkDir); err != nil {
		return nil, err
	}
	for _, o := range objs {
		if err := applyOne(ctx, cl, o); err != nil {
			return nil, err
		}
		fmt.Fprintf(c.Log, "applied %s\n", kube.RefOf(o).Address())
	}
	prune := inv.Missing(refs)
	kube.SortForDelete(prune)
	for _, ref := range prune {
		if err := cl.Delete(ctx, ref); err != nil {
			return nil, err
		}
		fmt.Fprintf(c.Log, "pruned %s\n", ref.Address())
	}
	if err := (kube.Inventory{Objects: refs}).Save(c.WorkDir); err != nil {
		return nil, err
	}
	outs, err := r.readOutputs(ctx, c, cl)
	if err != nil {
		return nil, err
	}
	return outs, r.saveOutputs(c, outs)
}

// applyOne applies obj, waiting briefly for its kind to be served when a
// CRD applied just before it is not established yet.
func applyOne(ctx context.Context, cl *kube.Client, obj *unstructured.Unstructured) error {
	deadline := time.Now().Add(30 * time.Second)
	for {
		_, err := cl.Apply(ctx, obj, false)
		if err == nil || !meta.IsNoMatchError(err) || time.Now().After(deadline) {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// Destroy deletes every object in the inventory, custom resources first and
// namespaces last, and forgets the inventory and outputs.
func (r *Runner) Destroy(ctx context.Context, c runner.Component, in runner.Inputs) error {
	inv, err := kube.LoadInventory(c.WorkDir)
	if err != nil {
		return err
	}
	if len(inv.Objects) > 0 {
		cl, err := r.client(ctx, c, in)
		if err != nil {
			return err
		}
		refs := append([]kube.Ref(nil), inv.Objects...)
		kube.SortForDelete(refs)
		for i, ref := range refs {
			if err := cl.Delete(ctx, ref); err != nil {
				// Keep what is left on record, so destroy can be retried.
				_ = kube.Inventory{Objects: refs[i:]}.Save(c.WorkDir)
				return err
			}
			fmt.Fprintf(c.Log, "deleted %s\n", ref.Address())
		}
	}
	for _, f := range []string{"inventory.json", outputsFile} {
		if err := os.Remove(filepath.Join(c.WorkDir, f)); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
	}
	return nil
}

// Outputs returns the outputs recorded by the last apply.
func (r *Runner) Outputs(_ context.Context, c runner.Component) (runner.Outputs, error) {
	return loadOutputs(r.sealer, c)
}

func (r *Runner) readOutputs(ctx context.Context, c runner.Component, cl *kube.Client) (runner.Outputs, error) {
	return kube.DeclaredOutputs(ctx, cl, c.Def, c.Spec.Namespace(c.Def))
}

func (r *Runner) saveOutputs(c runner.Component, outs runner.Outputs) error {
	return kube.SaveOutputs(r.sealer, filepath.Join(c.WorkDir, outputsFile), outs)
}

func loadOutputs(s *kube.Sealer, c runner.Component) (runner.Outputs, error) {
	return kube.LoadOutputs(s, filepath.Join(c.WorkDir, outputsFile))
}

// Workloads looks at the workloads among the objects the last apply left in
// the inventory (see runner.WorkloadReader).
func (r *Runner) Workloads(ctx context.Context, c runner.Component, in runner.Inputs, objects []string) (runner.Workloads, error) {
	inv, err := kube.LoadInventory(c.WorkDir)
	if err != nil {
		return runner.Workloads{}, err
	}
	cl, err := r.client(ctx, c, in)
	if err != nil {
		return runner.Workloads{}, err
	}
	return cl.Workloads(ctx, inv.Objects, objects, c.Spec.Namespace(c.Def))
}
