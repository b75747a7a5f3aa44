package kube

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"sort"
	"strconv"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"knit.dev/knit/internal/runner"
)

type runtimeObject = runtime.Object

// Diff compares the desired objects with the cluster. Every object is
// server-side applied in dry-run mode, so validation and admission
// (webhooks, policies) refuse at plan what they would refuse at apply,
// the object named. One that does not exist is a create; for one that
// exists the result is compared with the live object, field by field, so
// an update names exactly the fields knit would change (fields that only
// other managers set are not compared: knit's apply leaves them alone).
// Each of previous (what knit applied before) that is no longer desired and
// still exists is a delete. Changes come back in apply order, deletions last.
func (c *Client) Diff(ctx context.Context, desired []*unstructured.Unstructured, previous []Ref) ([]runner.ResourceChange, error) {
	var out []runner.ResourceChange
	refs := make([]Ref, 0, len(desired))
	for _, obj := range desired {
		r := RefOf(obj)
		refs = append(refs, r)
		live, err := c.Get(ctx, r)
		if err != nil {
			return nil, fmt.Errorf("read %s: %w", r.Address(), err)
		}
		merged, err := c.Apply(ctx, obj, true)
		if live == nil && unplannable(err) {
			err = nil // checked by the apply that creates it
		}
		if err != nil {
			return nil, fmt.Errorf("dry-run apply: %w", err)
		}
		if live == nil {
			out = append(out, runner.ResourceChange{Address: r.Address(), Action: runner.ActionCreate})
			continue
		}
		if paths := ChangedPaths(live.Object, merged.Object); len(paths) > 0 {
			out = append(out, runner.ResourceChange{Address: r.Address(), Action: runner.ActionUpdate, Attributes: paths})
		}
	}
	gone := Inventory{Objects: previous}.Missing(refs)
	SortForDelete(gone)
	for _, r := range gone {
		live, err := c.Get(ctx, r)
		if err != nil {
			return nil, fmt.Errorf("read %s: %w", r.Address(), err)
		}
		if live != nil {
			out = append(out, runner.ResourceChange{Address: r.Address(), Action: runner.ActionDelete})
		}
	}
	return out, nil
}

// unplannable reports whether a new object's dry run failed only because
// what it needs is created by the same apply: its kind (a CRD applied
// just before it) or its namespace.
func unplannable(err error) bool {
	if meta.IsNoMatchError(err) {
		return true
	}
	var st apierrors.APIStatus
	if !apierrors.IsNotFound(err) || !errors.As(err, &st) {
		return false
	}
	d := st.Status().Details
	return d != nil && d.Kind == "namespaces"
}

// ignored are the fields the server maintains itself, which differ between
// a live object and a dry-run result without anyone changing anything.
var ignored = map[string]bool{
	"metadata.managedFields": true, "metadata.resourceVersion": true, "metadata.generation": true,
	"metadata.creationTimestamp": true, "metadata.uid": true, "metadata.selfLink": true, "status": true,
}

// ChangedPaths lists the field paths (spec.replicas, data.greeting,
// spec.template.spec.containers[0].image) whose values differ between a
// and b, sorted; a map or list that exists on one side only is one path.
func ChangedPaths(a, b map[string]any) []string {
	var out []string
	diffValue("", a, b, &out)
	sort.Strings(out)
	return out
}

func diffValue(path string, a, b any, out *[]string) {
	if ignored[path] {
		return
	}
	switch av := a.(type) {
	case map[string]any:
		bv, ok := b.(map[string]any)
		if !ok {
			*out = append(*out, path)
			return
		}
		keys := map[string]bool{}
		for k := range av {
			keys[k] = true
		}
		for k := range bv {
			keys[k] = true
		}
		for k := range keys {
			p := k
			if path != "" {
				p = path + "." + k
			}
			diffValue(p, av[k], bv[k], out)
		}
	case []any:
		bv, ok := b.([]any)
		if !ok || len(av) != len(bv) {
			*out = append(*out, path)
			return
		}
		for i := range av {
			diffValue(path+"["+strconv.Itoa(i)+"]", av[i], bv[i], out)
		}
	default:
		if !reflect.DeepEqual(a, b) {
			*out = append(*out, path)
		}
	}
}

// Summarise counts a diff into a plan.
func Summarise(p *runner.Plan, changes []runner.ResourceChange) {
	p.Resources = changes
	for _, ch := range changes {
		switch ch.Action {
		case runner.ActionCreate:
			p.Add++
		case runner.ActionUpdate, runner.ActionReplace:
			p.Change++
		case runner.ActionDelete:
			p.Destroy++
		}
	}
}
