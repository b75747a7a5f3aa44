package kubetest

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
)

// finalizeNamespaces stands in for kube-controller-manager's namespace
// controller, which the test server lacks: a namespace being deleted has
// its "kubernetes" finalizer removed, so it goes away as on a real cluster
// (its objects are not deleted first: the server is thrown away). It runs
// until ctx ends.
func finalizeNamespaces(ctx context.Context, cs kubernetes.Interface) {
	for ctx.Err() == nil {
		w, err := cs.CoreV1().Namespaces().Watch(ctx, metav1.ListOptions{})
		if err != nil {
			return
		}
		for ev := range w.ResultChan() {
			ns, ok := ev.Object.(*corev1.Namespace)
			if !ok || ev.Type == watch.Deleted || ns.DeletionTimestamp == nil || len(ns.Spec.Finalizers) == 0 {
				continue
			}
			ns.Spec.Finalizers = nil
			cs.CoreV1().Namespaces().Finalize(ctx, ns, metav1.UpdateOptions{}) // a conflict comes back as another event
		}
		w.Stop()
	}
}
