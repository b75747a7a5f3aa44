package dag

import (
	"slices"
	"strings"
	"testing"
)

// build returns a graph with the given edges ("a>b" means a -> b) and
// isolated vertices (names without '>').
func build(specs ...string) *Graph {
	g := New()
	for _, s := range specs {
		if from, to, ok := strings.Cut(s, ">"); ok {
			g.Connect(from, to)
		} else {
			g.Add(s)
		}
	}
	return g
}

// edgeList renders edges compactly for comparisons.
func edgeList(g *Graph) []string {
	out := []string{}
	for _, e := range g.Edges() {
		out = append(out, e.From+">"+e.To)
	}
	return out
}

func TestGraphBasics(t *testing.T) {
	var g Graph // zero value must be usable
	g.Connect("c", "a")
	g.Connect("c", "a") // idempotent
	g.Connect("b", "a")
	g.Add("b") // idempotent
	g.Add("z")
	g.Connect("a", "a") // self edge stored

	if got, want := g.Vertices(), []string{"a", "b", "c", "z"}; !slices.Equal(got, want) {
		t.Errorf("Vertices = %v, want %v", got, want)
	}
	if got, want := edgeList(&g), []string{"a>a", "b>a", "c>a"}; !slices.Equal(got, want) {
		t.Errorf("Edges = %v, want %v", got, want)
	}
	if !g.Has("z") || g.Has("nope") {
		t.Errorf("Has wrong")
	}
	if got := New().Vertices(); got == nil || len(got) != 0 {
		t.Errorf("empty Vertices = %#v, want empty non-nil", got)
	}
}

func TestNeighbours(t *testing.T) {
	// a -> b -> d, a -> c -> d, d -> e, x isolated, loop p <-> q -> a
	g := build("a>b", "a>c", "b>d", "c>d", "d>e", "x", "p>q", "q>p", "q>a")
	tests := []struct {
		name string
		fn   func(string) []string
		v    string
		want []string
	}{
		{"deps of d", g.DependenciesOf, "d", []string{"b", "c"}},
		{"deps of a", g.DependenciesOf, "a", []string{"q"}},
		{"deps of unknown", g.DependenciesOf, "nope", []string{}},
		{"dependents of a", g.DependentsOf, "a", []string{"b", "c"}},
		{"dependents of e", g.DependentsOf, "e", []string{}},
		{"ancestors of e", g.Ancestors, "e", []string{"a", "b", "c", "d", "p", "q"}},
		{"ancestors on cycle exclude self", g.Ancestors, "p", []string{"q"}},
		{"ancestors of x", g.Ancestors, "x", []string{}},
		{"descendants of a", g.Descendants, "a", []string{"b", "c", "d", "e"}},
		{"descendants on cycle exclude self", g.Descendants, "q", []string{"a", "b", "c", "d", "e", "p"}},
		{"descendants of unknown", g.Descendants, "nope", []string{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.fn(tt.v); !slices.Equal(got, tt.want) {
				t.Errorf("got %v, want %v", got, tt.want)
			}
		})
	}
}

func TestDerivedGraphs(t *testing.T) {
	// Diamond a->b, a->c, b->d, c->d plus branch x->y and isolated z.
	g := build("a>b", "a>c", "b>d", "c>d", "x>y", "z")
	tests := []struct {
		name      string
		got       *Graph
		wantVerts []string
		wantEdges []string
	}{
		{"Reverse", g.Reverse(),
			[]string{"a", "b", "c", "d", "x", "y", "z"},
			[]string{"b>a", "c>a", "d>b", "d>c", "y>x"}},
		{"Subgraph ignores unknown, keeps induced edges", g.Subgraph([]string{"a", "d", "b", "nope"}),
			[]string{"a", "b", "d"},
			[]string{"a>b", "b>d"}},
		{"WithDependencies of d", g.WithDependencies([]string{"d"}),
			[]string{"a", "b", "c", "d"},
			[]string{"a>b", "a>c", "b>d", "c>d"}},
		{"WithDependencies of b and y", g.WithDependencies([]string{"b", "y", "nope"}),
			[]string{"a", "b", "x", "y"},
			[]string{"a>b", "x>y"}},
		{"WithDependents of b", g.WithDependents([]string{"b"}),
			[]string{"b", "d"},
			[]string{"b>d"}},
		{"WithDependents of a and z", g.WithDependents([]string{"a", "z"}),
			[]string{"a", "b", "c", "d", "z"},
			[]string{"a>b", "a>c", "b>d", "c>d"}},
		{"WithDependents of nothing", g.WithDependents(nil),
			[]string{}, []string{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.got.Vertices(); !slices.Equal(got, tt.wantVerts) {
				t.Errorf("Vertices = %v, want %v", got, tt.wantVerts)
			}
			if got := edgeList(tt.got); !slices.Equal(got, tt.wantEdges) {
				t.Errorf("Edges = %v, want %v", got, tt.wantEdges)
			}
		})
	}
	// Derived graphs are copies: mutating them must not touch g.
	r := g.Reverse()
	r.Connect("q", "r")
	if g.Has("q") {
		t.Errorf("Reverse shares state with original")
	}
}
