package helm

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"

	jsonpatch "github.com/evanphx/json-patch"
	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chart"
	helmkube "helm.sh/helm/v3/pkg/kube"
	"helm.sh/helm/v3/pkg/release"
	apiextv1beta1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1beta1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
	"k8s.io/cli-runtime/pkg/resource"
	"sigs.k8s.io/yaml"

	"knit.dev/knit/internal/kube"
	"knit.dev/knit/internal/runner"
)

// Helm's ownership metadata, set on every object an upgrade applies.
const (
	managedByLabel        = "app.kubernetes.io/managed-by"
	releaseNameAnnotation = "meta.helm.sh/release-name"
	releaseNSAnnotation   = "meta.helm.sh/release-namespace"
	keepAnnotation        = "helm.sh/resource-policy"
)

// upgradeAction configures `helm upgrade` the same way for plan and apply:
// values are the ones given (never silently reused from the last
// release) and history is bounded.
func (rel *helmRelease) upgradeAction() *action.Upgrade {
	up := action.NewUpgrade(rel.cfg)
	up.Namespace, up.ResetValues, up.MaxHistory = rel.ns, true, rel.maxHistory
	return up
}

// dryRunUpgrade is Helm's own dry-run upgrade: the release it would store,
// its manifest and hooks, rendered with the cluster (lookup works as at apply).
func (rel *helmRelease) dryRunUpgrade(ctx context.Context, ch *chart.Chart, vals map[string]any) (*release.Release, error) {
	up := rel.upgradeAction()
	up.DryRun, up.DryRunOption = true, "server"
	next, err := up.RunWithContext(ctx, rel.name, ch, vals)
	if err != nil {
		return nil, fmt.Errorf("dry-run upgrade: %w", err)
	}
	return next, nil
}

// upgradeChanges computes what `helm upgrade` from cur to next changes, by
// Helm's rules: an object that does not exist is created; one that exists
// gets the patch Helm would send (a three-way strategic merge of the last
// release's object, the new one and the live one; for custom resources a
// JSON merge patch of the last release's object and the new one), which
// the server applies in dry-run mode, and the result is compared with the
// live object; objects of cur that next no longer renders are deleted
// unless they say helm.sh/resource-policy: keep.
func (rel *helmRelease) upgradeChanges(ctx context.Context, cur, next *release.Release, sensitive []string) ([]runner.ResourceChange, []string, error) {
	kc, ok := rel.cfg.KubeClient.(*helmkube.Client)
	if !ok {
		return nil, nil, fmt.Errorf("unexpected Helm client %T", rel.cfg.KubeClient)
	}
	original, err := kc.Build(bytes.NewBufferString(cur.Manifest), false)
	if err != nil {
		return nil, nil, fmt.Errorf("objects of revision %d: %w", cur.Version, err)
	}
	target, err := kc.Build(bytes.NewBufferString(next.Manifest), false)
	if err != nil {
		return nil, nil, fmt.Errorf("objects of the upgrade: %w", err)
	}
	var changes []runner.ResourceChange
	var custom []string
	for _, info := range target {
		setOwnership(info, rel.name, rel.ns)
		ch, isCustom, err := objectChange(info, original.Get(info), sensitive)
		if err != nil {
			return nil, nil, err
		}
		if isCustom {
			custom = append(custom, address(info))
		}
		if ch != nil {
			changes = append(changes, *ch)
		}
	}
	var notes []string
	for _, info := range original.Difference(target) {
		live, err := resource.NewHelper(info.Client, info.Mapping).Get(info.Namespace, info.Name)
		if apierrors.IsNotFound(err) {
			continue
		}
		if err != nil {
			return nil, nil, fmt.Errorf("read %s: %w", address(info), err)
		}
		if a, _ := meta.NewAccessor().Annotations(live); a[keepAnnotation] == "keep" {
			notes = append(notes, fmt.Sprintf("%s is no longer in the chart but is kept (%s: keep)", address(info), keepAnnotation))
			continue
		}
		changes = append(changes, runner.ResourceChange{Address: address(info), Action: runner.ActionDelete})
	}
	if len(custom) > 0 {
		notes = append(notes, "Helm patches custom resources two-way (last release → chart): edits made outside knit to "+
			strings.Join(custom, ", ")+" are neither shown here nor repaired by the upgrade")
	}
	return changes, notes, nil
}

// objectChange is what the upgrade does to one object; custom reports a
// custom resource (patched two-way by Helm).
func objectChange(info, original *resource.Info, sensitive []string) (ch *runner.ResourceChange, custom bool, err error) {
	helper := resource.NewHelper(info.Client, info.Mapping)
	live, err := helper.Get(info.Namespace, info.Name)
	if apierrors.IsNotFound(err) {
		return &runner.ResourceChange{Address: address(info), Action: runner.ActionCreate}, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("read %s: %w", address(info), err)
	}
	base := live // Helm's baseline for an object the last release did not have
	if original != nil {
		base = original.Object
	}
	patch, pt, custom, err := helmPatch(info, base, live)
	if err != nil {
		return nil, custom, fmt.Errorf("%s: %w", address(info), err)
	}
	if len(patch) == 0 || string(patch) == "{}" {
		return nil, custom, nil
	}
	merged, err := helper.DryRun(true).Patch(info.Namespace, info.Name, pt, patch, nil)
	if err != nil {
		return nil, custom, fmt.Errorf("dry-run patch %s: %w", address(info), err)
	}
	a, err := runtime.DefaultUnstructuredConverter.ToUnstructured(live)
	if err != nil {
		return nil, custom, err
	}
	b, err := runtime.DefaultUnstructuredConverter.ToUnstructured(merged)
	if err != nil {
		return nil, custom, err
	}
	return kube.UpdateOf(ref(info), a, b, sensitive), custom, nil
}

// helmPatch builds the patch Helm's upgrade sends for target (see
// helm.sh/helm/v3/pkg/kube createPatch, which is not exported): the same
// libraries, the same inputs.
func helmPatch(target *resource.Info, original, live runtime.Object) ([]byte, types.PatchType, bool, error) {
	oldData, err := json.Marshal(original)
	if err != nil {
		return nil, "", false, err
	}
	newData, err := json.Marshal(target.Object)
	if err != nil {
		return nil, "", false, err
	}
	liveData, err := json.Marshal(live)
	if err != nil {
		return nil, "", false, err
	}
	versioned := helmkube.AsVersioned(target)
	_, isUnstructured := versioned.(runtime.Unstructured)
	_, isCRD := versioned.(*apiextv1beta1.CustomResourceDefinition)
	if isUnstructured || isCRD {
		patch, err := jsonpatch.CreateMergePatch(oldData, newData)
		return patch, types.MergePatchType, true, err
	}
	patchMeta, err := strategicpatch.NewPatchMetaFromStruct(versioned)
	if err != nil {
		return nil, "", false, err
	}
	patch, err := strategicpatch.CreateThreeWayMergePatch(oldData, newData, liveData, patchMeta, true)
	return patch, types.StrategicMergePatchType, false, err
}

// setOwnership adds the label and annotations Helm's upgrade sets on every object.
func setOwnership(info *resource.Info, name, ns string) {
	acc := meta.NewAccessor()
	labels, _ := acc.Labels(info.Object)
	if labels == nil {
		labels = map[string]string{}
	}
	labels[managedByLabel] = "Helm"
	acc.SetLabels(info.Object, labels)
	ann, _ := acc.Annotations(info.Object)
	if ann == nil {
		ann = map[string]string{}
	}
	ann[releaseNameAnnotation], ann[releaseNSAnnotation] = name, ns
	acc.SetAnnotations(info.Object, ann)
}

func ref(info *resource.Info) kube.Ref {
	gvk := info.Mapping.GroupVersionKind
	ns := info.Namespace
	if info.Mapping.Scope.Name() != meta.RESTScopeNameNamespace {
		ns = ""
	}
	return kube.Ref{APIVersion: gvk.GroupVersion().String(), Kind: gvk.Kind, Namespace: ns, Name: info.Name}
}

func address(info *resource.Info) string { return ref(info).Address() }

// hookRef is where hook h lives.
func hookRef(h *release.Hook, ns string, namespaced func(schema.GroupVersionKind) bool) kube.Ref {
	var head struct {
		APIVersion string `json:"apiVersion"`
		Metadata   struct {
			Namespace string `json:"namespace"`
		} `json:"metadata"`
	}
	if err := yaml.Unmarshal([]byte(h.Manifest), &head); err != nil {
		return kube.Ref{Kind: h.Kind, Namespace: ns, Name: h.Name} // Helm rendered it; unreadable, as before
	}
	gvk := schema.FromAPIVersionAndKind(head.APIVersion, h.Kind)
	switch {
	case !namespaced(gvk):
		ns = ""
	case head.Metadata.Namespace != "":
		ns = head.Metadata.Namespace
	}
	return kube.Ref{Kind: h.Kind, Namespace: ns, Name: h.Name}
}

// namespaced reports whether objects of gvk live in a namespace, as the
// release's cluster serves them.
func (rel *helmRelease) namespaced(gvk schema.GroupVersionKind) bool {
	return rel.cl.Namespaced(gvk, nil)
}

// hookNotes says which hooks the apply runs: their effects are not in the
// plan. A hook is named where it lives: its own namespace, the release's,
// or none for a cluster-scoped kind (namespaced says which).
func hookNotes(hooks []*release.Hook, ns string, namespaced func(schema.GroupVersionKind) bool, want ...release.HookEvent) []string {
	var out []string
	for _, h := range hooks {
		for _, e := range h.Events {
			if slices.Contains(want, e) {
				out = append(out, fmt.Sprintf("%s hook %s runs at apply; what it does is not in this plan", e, hookRef(h, ns, namespaced).Address()))
			}
		}
	}
	sort.Strings(out)
	return out
}
