package main

import (
	"testing"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"
)

func traversal(t *testing.T, src string) hcl.Traversal {
	t.Helper()
	tr, diags := hclsyntax.ParseTraversalAbs([]byte(src), "t.hcl", hcl.InitialPos)
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	return tr
}

// Every output path a file reads stands in as a marker, and an input that
// is exactly one (an output, or an element of a list output) is a ref;
// one built from it is not.
func TestRefs(t *testing.T) {
	r := refs{}
	for _, s := range []string{"dependency.vpc.outputs.id", "dependency.vpc.outputs.subnets[1]", "dependency.vpc.outputs.tags.team", "dependency.db"} {
		r.add(traversal(t, s))
	}
	v := r.value()
	outs := v.GetAttr("vpc").GetAttr("outputs")
	id, ok := asRef(outs.GetAttr("id").AsString())
	if !ok || id.Dependency != "vpc" || id.Output != "id" || id.Index != nil {
		t.Errorf("id: %+v %v", id, ok)
	}
	sub, ok := asRef(outs.GetAttr("subnets").Index(ctyNum(1)).AsString())
	if !ok || sub.Output != "subnets" || sub.Index == nil || *sub.Index != 1 {
		t.Errorf("subnets[1]: %+v %v", sub, ok)
	}
	if _, ok := asRef(outs.GetAttr("tags").GetAttr("team").AsString()); ok {
		t.Error("tags.team is no output knit's valueFrom can name")
	}
	if !v.GetAttr("db").GetAttr("outputs").Type().IsObjectType() {
		t.Error("a dependency read without outputs still has an outputs object")
	}
	mixed := "x-" + outs.GetAttr("id").AsString()
	if _, ok := asRef(mixed); ok {
		t.Error("an interpolation is not a ref")
	}
	if fs := findMarkers(map[string]any{"a": []any{mixed}}); len(fs) != 1 || fs[0].kind != "dependency" || fs[0].detail != "vpc.id" {
		t.Errorf("findMarkers: %+v", fs)
	}
}

func ctyNum(i int64) cty.Value { return cty.NumberIntVal(i) }

func TestInputRef(t *testing.T) {
	r := refs{}
	r.add(traversal(t, "dependency.b.inputs.bar"))
	v := r.value().GetAttr("b").GetAttr("inputs").GetAttr("bar").AsString()
	if got, ok := asInputRef(v); !ok || got.Dependency != "b" || got.Input != "bar" {
		t.Errorf("asInputRef = %+v %v", got, ok)
	}
	if _, ok := asRef(v); ok {
		t.Error("an input is no output")
	}
}
