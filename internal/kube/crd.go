package kube

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
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
