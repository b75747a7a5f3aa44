package helm

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"helm.sh/helm/v3/pkg/release"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"knit.dev/knit/internal/kube"
	"knit.dev/knit/internal/runner"
)

// CreatedByAnnotation marks a namespace knit created for a component; its
// value is ENV/COMPONENT. Teardown removes only a namespace it marks for
// the component being torn down: never one that existed before.
const CreatedByAnnotation = "knit.dev/created-for"

func (rel *helmRelease) clientset() (kubernetes.Interface, error) {
	cfg := rest.CopyConfig(rel.rest)
	cfg.QPS, cfg.Burst = 50, 100 // as kube.NewClient: polls must not queue behind client-side throttling
	return kubernetes.NewForConfig(cfg)
}

// namespaceChange is the creation of the release's namespace when it does
// not exist yet, or nil.
func (rel *helmRelease) namespaceChange(ctx context.Context) (*runner.ResourceChange, error) {
	cs, err := rel.clientset()
	if err != nil {
		return nil, err
	}
	_, err = cs.CoreV1().Namespaces().Get(ctx, rel.ns, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return &runner.ResourceChange{Address: "Namespace/" + rel.ns, Action: runner.ActionCreate}, nil
	case err != nil:
		return nil, fmt.Errorf("read namespace %s: %w", rel.ns, err)
	}
	return nil, nil
}

// ensureNamespace creates the release's namespace when it is missing,
// marked as created for this component (Helm's CreateNamespace would not
// say who created it).
func (rel *helmRelease) ensureNamespace(ctx context.Context) error {
	cs, err := rel.clientset()
	if err != nil {
		return err
	}
	// Looked up first: an identity that may use a namespace need not be
	// allowed to create namespaces (a create is refused before it could
	// say AlreadyExists).
	if _, err := cs.CoreV1().Namespaces().Get(ctx, rel.ns, metav1.GetOptions{}); err == nil {
		return nil
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: rel.ns,
		Labels:      map[string]string{"name": rel.ns},
		Annotations: map[string]string{CreatedByAnnotation: rel.owner}}}
	_, err = cs.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create namespace %s: %w", rel.ns, err)
	}
	return nil
}

// ownedNamespace returns the release's namespace when knit created it for
// this component and no other Helm release lives in it, else nil.
func (rel *helmRelease) ownedNamespace(ctx context.Context, cs kubernetes.Interface) (*corev1.Namespace, error) {
	ns, err := cs.CoreV1().Namespaces().Get(ctx, rel.ns, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read namespace %s: %w", rel.ns, err)
	}
	if ns.Annotations[CreatedByAnnotation] != rel.owner {
		return nil, nil
	}
	others, err := cs.CoreV1().Secrets(rel.ns).List(ctx, metav1.ListOptions{LabelSelector: "owner=helm"})
	if err != nil {
		return nil, err
	}
	for _, s := range others.Items {
		if s.Labels["name"] != rel.name {
			return nil, nil // shared with another release: it stays
		}
	}
	return ns, nil
}

// destroyChanges lists what a teardown deletes: the release's objects, the
// hooks it left behind and the namespace knit created for it; and what it
// keeps, as Helm's uninstall does (see teardownSplit), with why, the
// namespace too while kept objects live in it. A teardown that keeps
// objects shows the deletion of the release itself.
func (rel *helmRelease) destroyChanges(ctx context.Context, cl *kube.Client, cur *release.Release) ([]runner.ResourceChange, error) {
	previous, kept, err := rel.teardownSplit(ctx, cur)
	if err != nil {
		return nil, err
	}
	hooks, err := rel.leftoverHooks(ctx, cl)
	if err != nil {
		return nil, err
	}
	changes, err := cl.Diff(ctx, nil, kube.Union(previous, hooks))
	if err != nil {
		return nil, err
	}
	keptNS, err := rel.keptNamespace(ctx, kept)
	if err != nil {
		return nil, err
	}
	if keptNS != nil {
		kept = append(kept, *keptNS)
	} else if owned, err := rel.owned(ctx); err != nil {
		return nil, err
	} else if owned {
		changes = append(changes, runner.ResourceChange{Address: "Namespace/" + rel.ns, Action: runner.ActionDelete})
	}
	if len(kept) > 0 && cur != nil {
		changes = append(changes, runner.ResourceChange{Address: "Release/" + rel.ns + "/" + rel.name, Action: runner.ActionDelete})
	}
	return append(changes, keptChanges(kept)...), nil
}

// owned reports whether the release's namespace is one knit created for
// it and no other release lives in it (see ownedNamespace).
func (rel *helmRelease) owned(ctx context.Context) (bool, error) {
	cs, err := rel.clientset()
	if err != nil {
		return false, err
	}
	ns, err := rel.ownedNamespace(ctx, cs)
	return ns != nil, err
}

// disown removes the mark of a namespace knit created for the release,
// which a teardown keeps: the kept objects in it outlive the release, and
// no later teardown may delete them with it.
func (rel *helmRelease) disown(ctx context.Context) error {
	cs, err := rel.clientset()
	if err != nil {
		return err
	}
	patch := []byte(`{"metadata":{"annotations":{"` + CreatedByAnnotation + `":null}}}`)
	if _, err := cs.CoreV1().Namespaces().Patch(ctx, rel.ns, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		return fmt.Errorf("keep namespace %s: %w", rel.ns, err)
	}
	return nil
}

// keptNamespace is the namespace knit created for the release, kept
// because objects the teardown keeps live in it; or nil.
func (rel *helmRelease) keptNamespace(ctx context.Context, kept []keptObject) (*keptObject, error) {
	held := keptIn(kept, rel.ns)
	if len(held) == 0 {
		return nil, nil
	}
	owned, err := rel.owned(ctx)
	if err != nil || !owned {
		return nil, err
	}
	return &keptObject{kube.Ref{APIVersion: "v1", Kind: "Namespace", Name: rel.ns}, keptNamespaceOf + strings.Join(held, ", ")}, nil
}

// leftoverHooks are the hook objects of every recorded revision that still
// exist (a failed hook Job stays, whatever its delete policy), except those
// marked helm.sh/resource-policy: keep.
func (rel *helmRelease) leftoverHooks(ctx context.Context, cl *kube.Client) ([]kube.Ref, error) {
	history, err := rel.cfg.Releases.History(rel.name)
	if err != nil {
		return nil, nil // no release: no hooks
	}
	var refs []kube.Ref
	for _, h := range history {
		refs = kube.Union(refs, hookRefs(h, rel.ns, cl))
	}
	var out []kube.Ref
	for _, r := range refs {
		live, err := cl.Get(ctx, r)
		if err != nil {
			return nil, fmt.Errorf("read hook %s: %w", r.Address(), err)
		}
		if live != nil && !keeps(live.GetAnnotations()) {
			out = append(out, r)
		}
	}
	return out, nil
}

// hookRefs names the hook objects of one revision (test hooks included).
func hookRefs(r *release.Release, ns string, cl *kube.Client) []kube.Ref {
	var out []kube.Ref
	for _, h := range r.Hooks {
		objs, err := kube.Decode([]byte(h.Manifest), "hook "+h.Name)
		if err != nil {
			continue
		}
		cl.Prepare(objs, ns)
		for _, o := range objs {
			out = append(out, kube.RefOf(o))
		}
	}
	return out
}

// deleteAndWait deletes refs and waits, up to the release's timeout,
// until they are gone.
func (rel *helmRelease) deleteAndWait(ctx context.Context, cl *kube.Client, refs []kube.Ref) error {
	for _, r := range refs {
		if err := cl.Delete(ctx, r); err != nil {
			return err
		}
	}
	return rel.waitGone(ctx, func(ctx context.Context) ([]string, error) {
		var left []string
		for _, r := range refs {
			live, err := cl.Get(ctx, r)
			if err != nil {
				return nil, err
			}
			if live != nil {
				left = append(left, r.Address()+terminating(live.GetFinalizers()))
			}
		}
		return left, nil
	})
}

// removeNamespace deletes the namespace knit created for the release and
// waits until it is gone.
func (rel *helmRelease) removeNamespace(ctx context.Context) (bool, error) {
	cs, err := rel.clientset()
	if err != nil {
		return false, err
	}
	ns, err := rel.ownedNamespace(ctx, cs)
	if err != nil || ns == nil {
		return false, err
	}
	if err := cs.CoreV1().Namespaces().Delete(ctx, rel.ns, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		return false, fmt.Errorf("delete namespace %s: %w", rel.ns, err)
	}
	return true, rel.waitGone(ctx, func(ctx context.Context) ([]string, error) {
		ns, err := cs.CoreV1().Namespaces().Get(ctx, rel.ns, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return nil, nil
		}
		if err != nil {
			return nil, err
		}
		why := terminating(append(ns.Finalizers, finalizerNames(ns.Spec.Finalizers)...))
		for _, c := range ns.Status.Conditions {
			if c.Status == corev1.ConditionTrue {
				why += fmt.Sprintf("; %s: %s", c.Type, c.Message)
			}
		}
		return []string{"Namespace/" + rel.ns + why}, nil
	})
}

func finalizerNames(f []corev1.FinalizerName) []string {
	out := make([]string, len(f))
	for i, n := range f {
		out[i] = string(n)
	}
	return out
}

func terminating(finalizers []string) string {
	if len(finalizers) == 0 {
		return ""
	}
	return " (finalizers: " + strings.Join(finalizers, ", ") + ")"
}

// errStillTerminating is wrapped by a teardown that timed out waiting for deletions.
var errStillTerminating = errors.New("still terminating")

// waitGone polls left until it reports nothing, for at most the release's
// timeout; the timeout's error names what is still terminating.
func (rel *helmRelease) waitGone(ctx context.Context, left func(context.Context) ([]string, error)) error {
	var last []string
	var lastErr error
	err := wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, rel.timeout, true, func(ctx context.Context) (bool, error) {
		l, err := left(ctx)
		if err != nil {
			lastErr = err // a read may fail near the deadline: keep what was last seen
			return false, nil
		}
		last, lastErr = l, nil
		return len(l) == 0, nil
	})
	switch {
	case err == nil:
		return nil
	case len(last) > 0:
		return fmt.Errorf("%w after %s: %s", errStillTerminating, short(rel.timeout), strings.Join(last, ", "))
	case lastErr != nil:
		return lastErr
	}
	return err
}
