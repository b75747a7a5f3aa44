package dag

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"
)

func TestCycles(t *testing.T) {
	tests := []struct {
		name  string
		edges []string
		want  [][]string
	}{
		{"empty", nil, [][]string{}},
		{"acyclic diamond", []string{"a>b", "a>c", "b>d", "c>d"}, [][]string{}},
		{"self edge", []string{"a>a", "a>b"}, [][]string{{"a"}}},
		{"two cycle", []string{"b>a", "a>b"}, [][]string{{"a", "b"}}},
		{"triangle rotated to smallest", []string{"c>a", "a>b", "b>c"}, [][]string{{"a", "b", "c"}}},
		{"triangle listed in edge order", []string{"a>c", "c>b", "b>a"}, [][]string{{"a", "c", "b"}}},
		{
			"several distinct cycles",
			[]string{
				"a>b", "b>a", // [a b]
				"b>c", "c>d", "d>b", // [b c d]
				"x>y", "y>z", "z>x", // [x y z]
				"q>q",        // [q]
				"m>n", "n>o", // acyclic tail
				"d>m",
			},
			[][]string{{"a", "b"}, {"b", "c", "d"}, {"q"}, {"x", "y", "z"}},
		},
		{
			"complete graph on three",
			[]string{"a>b", "b>a", "a>c", "c>a", "b>c", "c>b"},
			[][]string{{"a", "b"}, {"a", "b", "c"}, {"a", "c"}, {"a", "c", "b"}, {"b", "c"}},
		},
		{
			"shared vertex figure eight",
			[]string{"a>b", "b>a", "a>c", "c>a"},
			[][]string{{"a", "b"}, {"a", "c"}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := build(tt.edges...).Cycles()
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Cycles = %v, want %v", got, tt.want)
			}
			// Insertion order must not matter.
			rng := rand.New(rand.NewPCG(1, 2))
			for range 10 {
				shuffled := slices.Clone(tt.edges)
				rng.Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
				if again := build(shuffled...).Cycles(); !reflect.DeepEqual(again, got) {
					t.Fatalf("order %v: Cycles = %v, want %v", shuffled, again, got)
				}
			}
		})
	}
}

func TestCyclesCapped(t *testing.T) {
	// The complete digraph on 8 vertices has 16064 elementary cycles.
	g := New()
	names := []string{"a", "b", "c", "d", "e", "f", "g", "h"}
	for _, x := range names {
		for _, y := range names {
			if x != y {
				g.Connect(x, y)
			}
		}
	}
	got := g.Cycles()
	if len(got) != MaxCycles {
		t.Fatalf("len(Cycles) = %d, want %d", len(got), MaxCycles)
	}
	if !slices.IsSortedFunc(got, slices.Compare[[]string]) {
		t.Errorf("cycles not sorted")
	}
	seen := map[string]bool{}
	for _, c := range got {
		key := fmt.Sprint(c)
		if seen[key] {
			t.Errorf("duplicate cycle %v", c)
		}
		seen[key] = true
		if slices.Min(c) != c[0] {
			t.Errorf("cycle %v does not start at its smallest vertex", c)
		}
		if len(c) != len(slices.Compact(slices.Sorted(slices.Values(c)))) {
			t.Errorf("cycle %v repeats a vertex", c)
		}
	}
	if again := g.Cycles(); !reflect.DeepEqual(again, got) {
		t.Errorf("capped Cycles not deterministic")
	}
}

func TestCycleError(t *testing.T) {
	tests := []struct {
		cycles [][]string
		want   string
	}{
		{nil, "cycle"},
		{[][]string{{"x"}}, "cycle: x → x"},
		{[][]string{{"a", "b", "c"}, {"x"}}, "cycle: a → b → c → a; cycle: x → x"},
	}
	for _, tt := range tests {
		err := error(&CycleError{Cycles: tt.cycles})
		if got := err.Error(); got != tt.want {
			t.Errorf("Error() = %q, want %q", got, tt.want)
		}
		var ce *CycleError
		if !errors.As(err, &ce) {
			t.Errorf("errors.As failed")
		}
	}
}
