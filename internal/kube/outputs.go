package kube

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"knit.dev/knit/internal/runner"
	"knit.dev/knit/internal/spec"
)

// ReadField reads a declared output from a live object. Kind may carry its
// group (Deployment.apps); without one, the first served group that has the
// kind is used (core first). Namespace defaults to ns for namespaced kinds.
func (c *Client) ReadField(ctx context.Context, f spec.ObjectField, ns string) (any, error) {
	kind, group, _ := strings.Cut(f.Kind, ".")
	m, err := c.mapper.RESTMapping(schema.GroupKind{Group: group, Kind: kind})
	if err != nil {
		c.mapper.Reset()
		if m, err = c.mapper.RESTMapping(schema.GroupKind{Group: group, Kind: kind}); err != nil {
			return nil, fmt.Errorf("kind %s: %w", f.Kind, err)
		}
	}
	r := Ref{APIVersion: m.GroupVersionKind.GroupVersion().String(), Kind: m.GroupVersionKind.Kind, Name: f.Name}
	if m.Scope.Name() == "namespace" {
		r.Namespace = f.Namespace
		if r.Namespace == "" {
			r.Namespace = ns
		}
	}
	obj, err := c.Get(ctx, r)
	if err != nil {
		return nil, err
	}
	if obj == nil {
		return nil, fmt.Errorf("%s does not exist", r.Address())
	}
	var v any = obj.Object
	for _, step := range f.Path {
		switch x := v.(type) {
		case map[string]any:
			if step.Key == "" {
				return nil, fmt.Errorf("%s: %s: a map cannot take an index", r.Address(), f.Text)
			}
			var ok bool
			if v, ok = x[step.Key]; !ok {
				return nil, fmt.Errorf("%s has no field %s", r.Address(), f.Text)
			}
		case []any:
			if step.Key != "" || step.Index >= len(x) {
				return nil, fmt.Errorf("%s has no field %s", r.Address(), f.Text)
			}
			v = x[step.Index]
		default:
			return nil, fmt.Errorf("%s has no field %s", r.Address(), f.Text)
		}
	}
	return v, nil
}

// DeclaredOutputs reads every output of def that has a from, flagged
// sensitive as declared.
func DeclaredOutputs(ctx context.Context, cl *Client, def *spec.Component, ns string) (runner.Outputs, error) {
	outs := runner.Outputs{}
	for _, o := range def.Outputs {
		if o.From == "" {
			continue
		}
		f, err := spec.ParseObjectField(o.From)
		if err != nil {
			return nil, fmt.Errorf("output %s: %w", o.Name, err)
		}
		v, err := cl.ReadField(ctx, f, ns)
		if err != nil {
			return nil, fmt.Errorf("output %s: %w", o.Name, err)
		}
		outs[o.Name] = runner.Output{Value: v, Sensitive: o.Sensitive}
	}
	return outs, nil
}

// SaveOutputs seals outs into path: outputs may be sensitive.
func SaveOutputs(s *Sealer, path string, outs runner.Outputs) error {
	_, err := s.WriteJSON(path, outs)
	return err
}

// LoadOutputs opens outputs saved by SaveOutputs; none saved is no outputs.
func LoadOutputs(s *Sealer, path string) (runner.Outputs, error) {
	sealed, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return runner.Outputs{}, nil
	}
	if err != nil {
		return nil, err
	}
	sum := sha256.Sum256(sealed)
	var outs runner.Outputs
	return outs, s.ReadJSON(path, hex.EncodeToString(sum[:]), &outs)
}
