package kube

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"

	"knit.dev/knit/internal/runner"
)

// crdResource is where the API serves CustomResourceDefinitions.
var crdResource = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}

// CRDs returns the CustomResourceDefinitions among objs.
func CRDs(objs []*unstructured.Unstructured) []*unstructured.Unstructured { return crdsOf(objs) }

// Defines reports whether one of crds defines gvk, at its version.
func Defines(crds []*unstructured.Unstructured, gvk schema.GroupVersionKind) bool {
	return crdDefines(crds, gvk)
}

// APIVersionsOf lists what crds add to the API, in the forms Helm's
// .Capabilities.APIVersions holds: group/version and group/version/kind.
func APIVersionsOf(crds []*unstructured.Unstructured) []string {
	var out []string
	for _, crd := range crds {
		group, _, _ := unstructured.NestedString(crd.Object, "spec", "group")
		kind, _, _ := unstructured.NestedString(crd.Object, "spec", "names", "kind")
		versions, _, _ := unstructured.NestedSlice(crd.Object, "spec", "versions")
		for _, v := range versions {
			m, ok := v.(map[string]any)
			if !ok || m["served"] == false {
				continue
			}
			gv := fmt.Sprint(group, "/", m["name"])
			out = append(out, gv, gv+"/"+kind)
		}
	}
	return out
}

// WaitEstablished waits until each CustomResourceDefinition named is
// Established, for at most timeout, then forgets what discovery knew, so
// their kinds are served to this client. A CRD whose names the server
// refuses (NamesAccepted False: another CRD of its group claims its kind,
// list kind or a short name) fails at once with the server's reason, as
// waiting would not help; at the timeout the error names each CRD not yet
// Established and its conditions.
func (c *Client) WaitEstablished(ctx context.Context, names []string, timeout time.Duration) error {
	pending := map[string]string{} // name → what its conditions say
	for _, n := range names {
		pending[n] = "no conditions yet"
	}
	var refused []string
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		for n := range pending {
			crd, err := c.dyn.Resource(crdResource).Get(ctx, n, metav1.GetOptions{})
			if err != nil {
				pending[n] = err.Error()
				continue
			}
			established, why, accepted := crdConditions(crd)
			switch {
			case established:
				delete(pending, n)
			case !accepted:
				refused = append(refused, fmt.Sprintf("CustomResourceDefinition/%s: %s", n, why))
			default:
				pending[n] = why
			}
		}
		return len(pending) == 0 || len(refused) > 0, nil
	})
	c.mapper.Reset()
	switch {
	case len(refused) > 0:
		sort.Strings(refused)
		return fmt.Errorf("the cluster refused the names of %s", strings.Join(refused, "; "))
	case err == nil:
		return nil
	case errors.Is(err, context.Canceled):
		return err
	}
	var left []string
	for n, why := range pending {
		left = append(left, fmt.Sprintf("CustomResourceDefinition/%s (%s)", n, why))
	}
	sort.Strings(left)
	return fmt.Errorf("not Established after %s: %s", timeout, strings.Join(left, ", "))
}

// crdConditions reads a CRD's status: whether it is Established, what its
// conditions say, and whether its names were accepted (true until the
// server says otherwise).
func crdConditions(crd *unstructured.Unstructured) (established bool, why string, accepted bool) {
	conds, _, _ := unstructured.NestedSlice(crd.Object, "status", "conditions")
	accepted = true
	var says []string
	for _, v := range conds {
		m, _ := v.(map[string]any)
		typ, status := fmt.Sprint(m["type"]), fmt.Sprint(m["status"])
		switch {
		case typ == "Established" && status == "True":
			established = true
		case typ == "NamesAccepted" && status == "False":
			accepted = false
		}
		if status != "True" {
			says = append(says, fmt.Sprintf("%s %s: %s (%v)", typ, status, m["reason"], m["message"]))
		}
	}
	if len(says) == 0 {
		says = []string{"no conditions yet"}
	}
	return established, strings.Join(says, "; "), accepted
}

// KindsOf are the kinds crds define.
func KindsOf(crds []*unstructured.Unstructured) []runner.Kind {
	var out []runner.Kind
	for _, crd := range crds {
		k := runner.Kind{CRD: crd.GetName()}
		k.Group, _, _ = unstructured.NestedString(crd.Object, "spec", "group")
		k.Kind, _, _ = unstructured.NestedString(crd.Object, "spec", "names", "kind")
		scope, _, _ := unstructured.NestedString(crd.Object, "spec", "scope")
		k.Namespaced = scope != "Cluster"
		versions, _, _ := unstructured.NestedSlice(crd.Object, "spec", "versions")
		for _, v := range versions {
			if m, ok := v.(map[string]any); ok {
				k.Versions = append(k.Versions, fmt.Sprint(m["name"]))
			}
		}
		out = append(out, k)
	}
	return out
}

// DefinitionsOf are stand-in CustomResourceDefinitions of kinds, enough
// for Served, Prepare and Defines to know them.
func DefinitionsOf(kinds []runner.Kind) []*unstructured.Unstructured {
	out := make([]*unstructured.Unstructured, 0, len(kinds))
	for _, k := range kinds {
		versions := make([]any, len(k.Versions))
		for i, v := range k.Versions {
			versions[i] = map[string]any{"name": v, "served": true}
		}
		scope := "Namespaced"
		if !k.Namespaced {
			scope = "Cluster"
		}
		out = append(out, &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
			"metadata": map[string]any{"name": k.CRD},
			"spec":     map[string]any{"group": k.Group, "scope": scope, "names": map[string]any{"kind": k.Kind}, "versions": versions},
		}})
	}
	return out
}

// NewKinds are the kinds the CustomResourceDefinitions among objs define
// that the cluster does not serve yet (Plan.Defines).
func (c *Client) NewKinds(objs []*unstructured.Unstructured) []runner.Kind {
	var out []runner.Kind
	for _, k := range KindsOf(crdsOf(objs)) {
		for _, v := range k.Versions {
			if _, err := c.Mapping(schema.GroupVersionKind{Group: k.Group, Version: v, Kind: k.Kind}); meta.IsNoMatchError(err) {
				out = append(out, k)
				break
			}
		}
	}
	return out
}

// ComingNotes are a plan's notes on the objects of kinds upstream
// components define in this run (PlanOptions.Coming), one per upstream:
// the server can check them only once that upstream's apply has created
// their CRDs, so what it makes of them is known after apply.
func ComingNotes(objs []*unstructured.Unstructured, coming []runner.Kind) []string {
	by := map[string][]string{}
	var order []string
	for _, o := range objs {
		gvk := o.GroupVersionKind()
		for _, k := range coming {
			if k.Group == gvk.Group && k.Kind == gvk.Kind {
				key := k.By + "\x00" + k.CRD
				if by[key] == nil {
					order = append(order, key)
				}
				by[key] = append(by[key], RefOf(o).Address())
				break
			}
		}
	}
	var out []string
	for _, key := range order {
		up, crd, _ := strings.Cut(key, "\x00")
		out = append(out, fmt.Sprintf("%s: known after apply: upstream %s creates CustomResourceDefinition/%s, which defines its kind, in this run; the server checks it only then",
			strings.Join(by[key], ", "), up, crd))
	}
	return out
}
