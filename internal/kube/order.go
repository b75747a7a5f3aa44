package kube

import "sort"

// installOrder is the order kinds are applied in: what others need comes
// first (namespaces, then CRDs, then what workloads read, then workloads).
// Kinds not listed (custom resources above all) come last; deletion runs
// the order backwards, so custom resources go first and namespaces last.
var installOrder = []string{
	"Namespace", "CustomResourceDefinition", "PriorityClass", "NetworkPolicy", "ResourceQuota", "LimitRange",
	"PodDisruptionBudget", "ServiceAccount", "Secret", "ConfigMap", "StorageClass", "PersistentVolume",
	"PersistentVolumeClaim", "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding", "Service",
	"DaemonSet", "Pod", "ReplicationController", "ReplicaSet", "Deployment", "HorizontalPodAutoscaler",
	"StatefulSet", "Job", "CronJob", "IngressClass", "Ingress", "APIService",
	"MutatingWebhookConfiguration", "ValidatingWebhookConfiguration",
}

var kindRank = func() map[string]int {
	m := make(map[string]int, len(installOrder))
	for i, k := range installOrder {
		m[k] = i
	}
	return m
}()

func rank(kind string) int {
	if r, ok := kindRank[kind]; ok {
		return r
	}
	return len(installOrder)
}

// SortForApply orders refs for creation; ties keep a stable, readable order.
func SortForApply(refs []Ref) {
	sort.SliceStable(refs, func(i, j int) bool {
		if ri, rj := rank(refs[i].Kind), rank(refs[j].Kind); ri != rj {
			return ri < rj
		}
		return refs[i].Address() < refs[j].Address()
	})
}

// SortForDelete orders refs for deletion: the reverse of SortForApply.
func SortForDelete(refs []Ref) {
	SortForApply(refs)
	for i, j := 0, len(refs)-1; i < j; i, j = i+1, j-1 {
		refs[i], refs[j] = refs[j], refs[i]
	}
}
