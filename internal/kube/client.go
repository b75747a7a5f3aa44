package kube

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
)

// FieldManager is the field manager of every server-side apply knit makes.
const FieldManager = "knit"

// Client reaches one cluster. It is safe for concurrent use.
type Client struct {
	dyn    dynamic.Interface
	disc   discovery.CachedDiscoveryInterface
	mapper *restmapper.DeferredDiscoveryRESTMapper
}

// NewClient returns a client for cfg; it contacts the server only when used.
func NewClient(cfg *rest.Config) (*Client, error) {
	cfg = rest.CopyConfig(cfg)
	cfg.QPS, cfg.Burst = 50, 100
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return nil, err
	}
	disc := memory.NewMemCacheClient(dc)
	return &Client{dyn: dyn, disc: disc, mapper: restmapper.NewDeferredDiscoveryRESTMapper(disc)}, nil
}

// Mapping returns how the API serves gvk, refreshing discovery once when the
// kind is unknown (a CRD applied a moment ago).
func (c *Client) Mapping(gvk schema.GroupVersionKind) (*meta.RESTMapping, error) {
	m, err := c.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if meta.IsNoMatchError(err) {
		c.mapper.Reset()
		m, err = c.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	}
	return m, err
}

// resource returns the dynamic client for ref; ns is used for namespaced kinds.
func (c *Client) resource(r Ref) (dynamic.ResourceInterface, error) {
	m, err := c.Mapping(r.GVK())
	if err != nil {
		return nil, err
	}
	if m.Scope.Name() == meta.RESTScopeNameNamespace {
		return c.dyn.Resource(m.Resource).Namespace(r.Namespace), nil
	}
	return c.dyn.Resource(m.Resource), nil
}

// Get returns the live object, or nil when it does not exist.
func (c *Client) Get(ctx context.Context, r Ref) (*unstructured.Unstructured, error) {
	ri, err := c.resource(r)
	if meta.IsNoMatchError(err) {
		return nil, nil // its kind is not even served: the object cannot exist
	}
	if err != nil {
		return nil, err
	}
	obj, err := ri.Get(ctx, r.Name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	return obj, err
}

// Apply server-side applies obj with field manager knit, taking over fields
// other managers set (as a reconcile must); with dryRun the server computes
// the result without storing it.
func (c *Client) Apply(ctx context.Context, obj *unstructured.Unstructured, dryRun bool) (*unstructured.Unstructured, error) {
	r := RefOf(obj)
	ri, err := c.resource(r)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", r.Address(), err)
	}
	body, err := obj.MarshalJSON()
	if err != nil {
		return nil, err
	}
	force := true
	opts := metav1.PatchOptions{FieldManager: FieldManager, Force: &force}
	if dryRun {
		opts.DryRun = []string{metav1.DryRunAll}
	}
	out, err := ri.Patch(ctx, r.Name, types.ApplyPatchType, body, opts)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", r.Address(), err)
	}
	return out, nil
}

// Delete deletes the object (its dependents in the background); an object
// already gone is not an error.
func (c *Client) Delete(ctx context.Context, r Ref) error {
	ri, err := c.resource(r)
	if meta.IsNoMatchError(err) {
		return nil
	}
	if err != nil {
		return err
	}
	bg := metav1.DeletePropagationBackground
	err = ri.Delete(ctx, r.Name, metav1.DeleteOptions{PropagationPolicy: &bg})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("delete %s: %w", r.Address(), err)
	}
	return nil
}

// Namespaced reports whether objects of gvk live in a namespace. A kind the
// server does not serve yet is looked up among crds (the CRDs about to be
// applied with it); unknown, it is taken as namespaced (Served refuses
// such objects before they are planned).
func (c *Client) Namespaced(gvk schema.GroupVersionKind, crds []*unstructured.Unstructured) bool {
	if m, err := c.Mapping(gvk); err == nil {
		return m.Scope.Name() == meta.RESTScopeNameNamespace
	}
	for _, crd := range crds {
		group, _, _ := unstructured.NestedString(crd.Object, "spec", "group")
		kind, _, _ := unstructured.NestedString(crd.Object, "spec", "names", "kind")
		scope, _, _ := unstructured.NestedString(crd.Object, "spec", "scope")
		if group == gvk.Group && kind == gvk.Kind {
			return scope != "Cluster"
		}
	}
	return true
}

// Prepare sets namespace ns on the namespaced objects that name none and
// clears it on cluster-scoped ones, then sorts the objects for applying.
// The scope of a kind not served yet is that of its CRD among objs or
// defined (CRDs applied before them).
func (c *Client) Prepare(objs []*unstructured.Unstructured, ns string, defined ...*unstructured.Unstructured) {
	crds := append(crdsOf(objs), defined...)
	for _, o := range objs {
		if c.Namespaced(o.GroupVersionKind(), crds) {
			if o.GetNamespace() == "" {
				o.SetNamespace(ns)
			}
		} else {
			o.SetNamespace("")
		}
	}
	SortObjects(objs)
}

// SortObjects orders objects for applying (see SortForApply).
func SortObjects(objs []*unstructured.Unstructured) {
	refs := make([]Ref, len(objs))
	idx := map[string]*unstructured.Unstructured{}
	for i, o := range objs {
		refs[i] = RefOf(o)
		idx[refs[i].key()] = o
	}
	SortForApply(refs)
	for i, r := range refs {
		objs[i] = idx[r.key()]
	}
}

// Decode splits a multi-document YAML (or JSON) stream into objects,
// skipping empty documents and unwrapping lists.
func Decode(data []byte, source string) ([]*unstructured.Unstructured, error) {
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	var out []*unstructured.Unstructured
	for {
		var m map[string]any
		err := dec.Decode(&m)
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", source, err)
		}
		if len(m) == 0 {
			continue
		}
		obj := &unstructured.Unstructured{Object: m}
		if obj.IsList() {
			err := obj.EachListItem(func(o runtimeObject) error {
				out = append(out, o.(*unstructured.Unstructured))
				return nil
			})
			if err != nil {
				return nil, err
			}
			continue
		}
		if obj.GetKind() == "" || obj.GetAPIVersion() == "" || obj.GetName() == "" {
			return nil, fmt.Errorf("%s: an object without apiVersion, kind or metadata.name (%s)", source, strings.TrimSpace(obj.GetKind()+" "+obj.GetName()))
		}
		out = append(out, obj)
	}
}
