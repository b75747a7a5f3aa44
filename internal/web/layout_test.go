package web

import (
	"fmt"
	"slices"
	"testing"
)

func chain(names ...string) []node {
	var ns []node
	for i, n := range names {
		d := []string{}
		if i > 0 {
			d = []string{names[i-1]}
		}
		ns = append(ns, node{Name: n, DependsOn: d})
	}
	return ns
}

func TestLayoutPutsLevelsInColumns(t *testing.T) {
	ns := chain("net", "db", "api")
	ns = append(ns, node{Name: "web", DependsOn: []string{"api", "gone", "web"}}, node{Name: "dns", DependsOn: []string{}})
	got := fmt.Sprint(layOut(ns))
	if want := "[[dns net] [db] [api] [web]]"; got != want {
		t.Errorf("columns %s, want %s (a dependency not in the graph, or on itself, ignored)", got, want)
	}
	if got := layOut(nil); got == nil || len(got) != 0 {
		t.Errorf("no nodes: %v", got)
	}
	cycle := []node{{Name: "a", DependsOn: []string{"b"}}, {Name: "b", DependsOn: []string{"a"}}}
	if got := fmt.Sprint(layOut(cycle)); got != "[[a b]]" {
		t.Errorf("a cycle: %s, want one column", got)
	}
}

// crossings counts pairs of edges between the same two columns that cross.
func crossings(ns []node, cols [][]string) int {
	col, row := map[string]int{}, map[string]int{}
	for c, names := range cols {
		for r, n := range names {
			col[n], row[n] = c, r
		}
	}
	type edge struct{ a, b string }
	var es []edge
	for _, n := range ns {
		for _, d := range n.DependsOn {
			es = append(es, edge{d, n.Name})
		}
	}
	x := 0
	for i, e := range es {
		for _, f := range es[i+1:] {
			if col[e.a] == col[f.a] && col[e.b] == col[f.b] && (row[e.a]-row[f.a])*(row[e.b]-row[f.b]) < 0 {
				x++
			}
		}
	}
	return x
}

func TestLayoutOrdersColumnsToCrossLittle(t *testing.T) {
	ns := []node{
		{Name: "a", DependsOn: []string{}}, {Name: "b", DependsOn: []string{}}, {Name: "c", DependsOn: []string{}},
		{Name: "x", DependsOn: []string{"c"}}, {Name: "y", DependsOn: []string{"b"}}, {Name: "z", DependsOn: []string{"a"}},
	}
	cols := layOut(ns)
	if n := crossings(ns, cols); n != 0 {
		t.Errorf("columns %v cross %d times, want 0", cols, n)
	}
	// 1,000 components in 20 layers: every one once, every edge rightwards,
	// fewer crossings than in name order.
	var big []node
	for i := range 1000 {
		n := node{Name: fmt.Sprintf("c%04d", i), DependsOn: []string{}}
		if i >= 50 {
			l := i/50 - 1
			n.DependsOn = []string{fmt.Sprintf("c%04d", l*50+(i*7)%50), fmt.Sprintf("c%04d", l*50+(i*13+5)%50)}
		}
		big = append(big, n)
	}
	cols = layOut(big)
	var all []string
	col := map[string]int{}
	for c, names := range cols {
		all = append(all, names...)
		for _, n := range names {
			col[n] = c
		}
	}
	if len(cols) != 20 || len(all) != 1000 || len(slices.Compact(slices.Sorted(slices.Values(all)))) != 1000 {
		t.Fatalf("%d columns of %d nodes", len(cols), len(all))
	}
	for _, n := range big {
		for _, d := range n.DependsOn {
			if col[d] >= col[n.Name] {
				t.Fatalf("%s (column %d) depends on %s (column %d)", n.Name, col[n.Name], d, col[d])
			}
		}
	}
	byName := make([][]string, len(cols))
	for c := range cols {
		byName[c] = slices.Sorted(slices.Values(cols[c]))
	}
	if got, naive := crossings(big, cols), crossings(big, byName); got >= naive {
		t.Errorf("%d crossings, no fewer than in name order (%d)", got, naive)
	} else {
		t.Logf("1,000 components: %d crossings, %d in name order", got, naive)
	}
}

// A layout is computed once per shape: the nodes' states do not change
// it, their names and dependencies do.
func TestLayoutIsCachedByShape(t *testing.T) {
	var c layouts
	ns := chain("net", "db", "api")
	first := c.of(ns)
	ns[1].State, ns[1].Why = "awaiting-approval", "waiting for a person"
	if again := c.of(ns); again != first {
		t.Error("a change of state laid the graph out again")
	}
	ns[2].DependsOn = []string{"net"}
	if other := c.of(ns); other == first || other.Key == first.Key {
		t.Error("a change of dependencies kept the old layout")
	}
	for i := range layoutCacheSize + 10 {
		c.of(chain(fmt.Sprintf("n%d", i)))
	}
	if len(c.byKey) != layoutCacheSize || len(c.order) != layoutCacheSize {
		t.Errorf("the cache holds %d layouts (%d in order), want %d", len(c.byKey), len(c.order), layoutCacheSize)
	}
}

func BenchmarkLayout1000(b *testing.B) {
	var big []node
	for i := range 1000 {
		n := node{Name: fmt.Sprintf("c%04d", i), DependsOn: []string{}}
		if i >= 50 {
			l := i/50 - 1
			n.DependsOn = []string{fmt.Sprintf("c%04d", l*50+(i*7)%50), fmt.Sprintf("c%04d", l*50+(i*13+5)%50)}
		}
		big = append(big, n)
	}
	for b.Loop() {
		layOut(big)
	}
}
