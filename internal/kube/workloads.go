package kube

import (
	"context"
	"fmt"
	"sort"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"knit.dev/knit/internal/health"
	"knit.dev/knit/internal/runner"
	"knit.dev/knit/internal/spec"
)

// Bounds of a look at workloads: a component owning more workloads than
// MaxWorkloads is refused (its check cannot be judged whole), and each
// namespace's objects of a kind are read listPage at a time.
const (
	MaxWorkloads = 5000
	listPage     = 500
)

// workloadResources are the kinds a kubernetes check judges, read without
// discovery (whose requests take no context and would outlive a timeout).
var workloadResources = map[schema.GroupKind]schema.GroupVersionResource{
	{Group: "apps", Kind: "Deployment"}:  {Group: "apps", Version: "v1", Resource: "deployments"},
	{Group: "apps", Kind: "StatefulSet"}: {Group: "apps", Version: "v1", Resource: "statefulsets"},
	{Group: "apps", Kind: "DaemonSet"}:   {Group: "apps", Version: "v1", Resource: "daemonsets"},
	{Group: "batch", Kind: "Job"}:        {Group: "batch", Version: "v1", Resource: "jobs"},
}

// Workloads looks once at whether the workloads among owned are ready (see
// runner.WorkloadReader); objects narrows the look, ns is the namespace of
// an object named without one. It lists each namespace's objects of a kind
// (paged) rather than reading them one by one, and names at most
// health.MaxNotReady that are not ready.
func (c *Client) Workloads(ctx context.Context, owned []Ref, objects []string, ns string) (runner.Workloads, error) {
	var w runner.Workloads
	picked, unowned := pickWorkloads(owned, objects, ns)
	if len(picked) > MaxWorkloads {
		return w, fmt.Errorf("%d workloads: more than %d, too many to judge at once (name some with kubernetes.objects)", len(picked), MaxWorkloads)
	}
	for _, o := range unowned {
		noteOn(&w, o+": not an object of this component (not read)")
	}
	w.Checked = len(picked) + len(unowned)
	groups := map[schema.GroupVersionResource]map[string][]Ref{}
	for _, r := range picked {
		gvr := workloadResources[r.GVK().GroupKind()]
		if groups[gvr] == nil {
			groups[gvr] = map[string][]Ref{}
		}
		groups[gvr][r.Namespace] = append(groups[gvr][r.Namespace], r)
	}
	for _, gvr := range sortedKeys(groups) {
		for _, ns := range sortedKeys(groups[gvr]) {
			live, err := c.listNamed(ctx, gvr, ns, groups[gvr][ns])
			if err != nil {
				return runner.Workloads{}, err
			}
			for _, r := range groups[gvr][ns] {
				obj := live[r.Name]
				if obj == nil {
					noteOn(&w, label(r)+": does not exist")
					continue
				}
				if ok, why := Ready(obj); !ok {
					noteOn(&w, label(r)+": "+why)
				}
			}
		}
	}
	return w, nil
}

// label names a workload as evidence does: Kind namespace/name.
func label(r Ref) string { return r.Kind + " " + r.Namespace + "/" + r.Name }

// note records one workload that is not ready, naming the first few.
func noteOn(w *runner.Workloads, s string) {
	if len(w.NotReady) < health.MaxNotReady {
		w.NotReady = append(w.NotReady, s)
		return
	}
	w.More++
}

// pickWorkloads is the owned workloads a check judges: all of them, or
// those objects names; an object named that the component does not own is
// returned apart, never to be read (a check cannot look into namespaces
// or objects its component does not own).
func pickWorkloads(owned []Ref, objects []string, ns string) (picked []Ref, unowned []string) {
	byAddr := map[string]Ref{}
	var all []Ref
	for _, r := range owned {
		if _, ok := workloadResources[r.GVK().GroupKind()]; !ok {
			continue
		}
		if _, dup := byAddr[r.Address()]; !dup {
			byAddr[r.Address()] = r
			all = append(all, r)
		}
	}
	if len(objects) == 0 {
		return all, nil
	}
	for _, o := range objects {
		kind, namespace, name, problem := spec.ParseWorkload(o)
		if problem != "" {
			unowned = append(unowned, o)
			continue
		}
		if namespace == "" {
			namespace = ns
		}
		addr := kind + "/" + namespace + "/" + name
		if r, ok := byAddr[addr]; ok {
			picked = append(picked, r)
		} else {
			unowned = append(unowned, kind+" "+namespace+"/"+name)
		}
	}
	return picked, unowned
}

// listNamed lists ns's objects of gvr, page by page, keeping those refs
// name. It stops early once all are found.
func (c *Client) listNamed(ctx context.Context, gvr schema.GroupVersionResource, ns string, refs []Ref) (map[string]*unstructured.Unstructured, error) {
	want := map[string]bool{}
	for _, r := range refs {
		want[r.Name] = true
	}
	found := map[string]*unstructured.Unstructured{}
	opts := metav1.ListOptions{Limit: listPage}
	for {
		list, err := c.dyn.Resource(gvr).Namespace(ns).List(ctx, opts)
		if err != nil {
			return nil, fmt.Errorf("list %s in %s: %w", gvr.Resource, ns, err)
		}
		for i := range list.Items {
			if o := &list.Items[i]; want[o.GetName()] {
				found[o.GetName()] = o
			}
		}
		if opts.Continue = list.GetContinue(); opts.Continue == "" || len(found) == len(want) {
			return found, nil
		}
	}
}

func sortedKeys[K interface {
	~string | schema.GroupVersionResource
}, V any](m map[K]V) []K {
	keys := make([]K, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return fmt.Sprint(keys[i]) < fmt.Sprint(keys[j]) })
	return keys
}

// Ready judges one workload from its status, as kubectl rollout status
// does, and says why it is not ready: a Deployment's new replicas all
// available, a StatefulSet's all updated and ready, a DaemonSet's all
// updated and available (each with its controller's status current), a
// Job complete.
func Ready(obj *unstructured.Unstructured) (bool, string) {
	st := func(f ...string) int64 {
		v, _ := number(obj, append([]string{"status"}, f...)...)
		return v
	}
	if obj.GetKind() == "Job" {
		return jobReady(obj)
	}
	if g, _ := number(obj, "metadata", "generation"); g > st("observedGeneration") {
		return false, fmt.Sprintf("generation %d not yet observed by its controller (observed %d)", g, st("observedGeneration"))
	}
	replicas, found := number(obj, "spec", "replicas")
	if !found {
		replicas = 1
	}
	switch obj.GetKind() {
	case "Deployment":
		if c := condition(obj, "Progressing"); c.reason == "ProgressDeadlineExceeded" {
			return false, fmt.Sprintf("%d/%d available (%s)", st("availableReplicas"), replicas, c.reason)
		}
		switch {
		case st("updatedReplicas") < replicas:
			return false, fmt.Sprintf("%d/%d updated", st("updatedReplicas"), replicas)
		case st("replicas") > st("updatedReplicas"):
			return false, fmt.Sprintf("%d old replicas pending termination", st("replicas")-st("updatedReplicas"))
		case st("availableReplicas") < replicas:
			return false, withReason(fmt.Sprintf("%d/%d available", st("availableReplicas"), replicas), condition(obj, "Available"))
		case condition(obj, "Available").status != "True":
			return false, withReason("Available condition not True", condition(obj, "Available"))
		}
	case "StatefulSet":
		switch {
		case st("updatedReplicas") < replicas:
			return false, fmt.Sprintf("%d/%d updated", st("updatedReplicas"), replicas)
		case st("readyReplicas") < replicas:
			return false, fmt.Sprintf("%d/%d ready", st("readyReplicas"), replicas)
		}
	case "DaemonSet":
		desired := st("desiredNumberScheduled")
		switch {
		case st("updatedNumberScheduled") < desired:
			return false, fmt.Sprintf("%d/%d updated", st("updatedNumberScheduled"), desired)
		case st("numberAvailable") < desired:
			return false, fmt.Sprintf("%d/%d available", st("numberAvailable"), desired)
		}
	}
	return true, ""
}

// jobReady: a Job is ready once Complete; Failed is final.
func jobReady(obj *unstructured.Unstructured) (bool, string) {
	if c := condition(obj, "Failed"); c.status == "True" {
		return false, withReason("failed", c)
	}
	if condition(obj, "Complete").status == "True" {
		return true, ""
	}
	active, _ := number(obj, "status", "active")
	succeeded, _ := number(obj, "status", "succeeded")
	return false, fmt.Sprintf("not complete (%d active, %d succeeded)", active, succeeded)
}

// number reads a whole number field, as the API server's JSON decodes it
// (int64) or as YAML and JSON decoders do (float64).
func number(obj *unstructured.Unstructured, fields ...string) (int64, bool) {
	v, found, _ := unstructured.NestedFieldNoCopy(obj.Object, fields...)
	switch n := v.(type) {
	case int64:
		return n, found
	case int:
		return int64(n), found
	case float64:
		return int64(n), found
	}
	return 0, false
}

type cond struct{ status, reason string }

// condition is obj's status condition of type t (zero when absent).
func condition(obj *unstructured.Unstructured, t string) cond {
	list, _, _ := unstructured.NestedSlice(obj.Object, "status", "conditions")
	for _, c := range list {
		m, _ := c.(map[string]any)
		if m["type"] == t {
			s, _ := m["status"].(string)
			r, _ := m["reason"].(string)
			return cond{status: s, reason: r}
		}
	}
	return cond{}
}

// withReason adds c's reason to s, bounded: a reason is a CamelCase word,
// but one written by anyone with access to the status could be long.
func withReason(s string, c cond) string {
	r := strings.TrimSpace(c.reason)
	if r == "" {
		return s
	}
	if len(r) > 64 {
		r = r[:64] + "…"
	}
	return s + " (" + r + ")"
}
