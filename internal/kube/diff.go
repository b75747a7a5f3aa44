package kube

import (
	"context"
	"errors"
	"fmt"

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
// Values of Secrets and values holding one of sensitive are masked.
// Each of previous (what knit applied before) that is no longer desired and
// still exists is a delete. Changes come back in apply order, deletions last.
func (c *Client) Diff(ctx context.Context, desired []*unstructured.Unstructured, previous []Ref, sensitive ...string) ([]runner.ResourceChange, error) {
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
		if ch := UpdateOf(r, live.Object, merged.Object, sensitive); ch != nil {
			out = append(out, *ch)
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

// UpdateOf is the update of object r from live to merged, or nil when
// nothing differs; values of a Secret or holding a sensitive string are masked.
func UpdateOf(r Ref, live, merged map[string]any, sensitive []string) *runner.ResourceChange {
	changes := ValueChanges(live, merged, ObjectDiffOptions(r.Kind, sensitive))
	if len(changes) == 0 {
		return nil
	}
	return &runner.ResourceChange{Address: r.Address(), Action: runner.ActionUpdate, Attributes: Paths(changes), Changes: changes}
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
