package kube

import (
	"errors"
	"fmt"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Served checks, before anything is planned, that the cluster serves the
// kind of every object at its API version, or that a
// CustomResourceDefinition among objs defines it there. The error names
// every object that fails, with the version the cluster serves instead
// when it serves the kind at another one (a removed API version):
//
//	ClusterRole/reader: ClusterRole rbac.authorization.k8s.io/v1beta1 is not served by this cluster; it serves rbac.authorization.k8s.io/v1
func (c *Client) Served(objs []*unstructured.Unstructured) error {
	crds := crdsOf(objs)
	var msgs []string
	for _, o := range objs {
		gvk := o.GroupVersionKind()
		_, err := c.Mapping(gvk)
		switch {
		case err == nil || crdDefines(crds, gvk):
			continue
		case !meta.IsNoMatchError(err):
			return fmt.Errorf("%s: ask the cluster which kinds it serves: %w", RefOf(o).Address(), err)
		}
		msgs = append(msgs, RefOf(o).Address()+": "+c.notServed(gvk))
	}
	if len(msgs) == 0 {
		return nil
	}
	sort.Strings(msgs)
	return errors.New(strings.Join(msgs, "\n"))
}

// notServed says that gvk is not served, and what is instead.
func (c *Client) notServed(gvk schema.GroupVersionKind) string {
	what := fmt.Sprintf("%s %s is not served by this cluster", gvk.Kind, gvk.GroupVersion())
	ms, err := c.mapper.RESTMappings(gvk.GroupKind())
	if err != nil || len(ms) == 0 {
		return what + ": apply the CustomResourceDefinition that defines it first, or in this component"
	}
	var served []string
	for _, m := range ms {
		served = append(served, m.GroupVersionKind.GroupVersion().String())
	}
	sort.Strings(served)
	return what + "; it serves " + strings.Join(served, ", ")
}

// crdsOf returns the CustomResourceDefinitions among objs.
func crdsOf(objs []*unstructured.Unstructured) []*unstructured.Unstructured {
	var crds []*unstructured.Unstructured
	for _, o := range objs {
		if o.GetKind() == "CustomResourceDefinition" {
			crds = append(crds, o)
		}
	}
	return crds
}

// crdDefines reports whether one of crds defines gvk, at its version.
func crdDefines(crds []*unstructured.Unstructured, gvk schema.GroupVersionKind) bool {
	for _, crd := range crds {
		group, _, _ := unstructured.NestedString(crd.Object, "spec", "group")
		kind, _, _ := unstructured.NestedString(crd.Object, "spec", "names", "kind")
		if group != gvk.Group || kind != gvk.Kind {
			continue
		}
		versions, _, _ := unstructured.NestedSlice(crd.Object, "spec", "versions")
		for _, v := range versions {
			if m, ok := v.(map[string]any); ok && m["name"] == gvk.Version {
				return true
			}
		}
	}
	return false
}
