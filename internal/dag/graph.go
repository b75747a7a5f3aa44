// Package dag is knit's generic dependency graph: named vertices, directed
// "must finish before" edges, cycle detection, topological levels and a
// concurrent walker. It knows nothing about environments; callers map their
// own objects onto vertex names.
//
// Every method that returns names returns them sorted, so output is
// deterministic regardless of insertion order or map iteration order.
package dag

import (
	"slices"
	"sort"
)

// Graph is a directed graph of named vertices. An edge from -> to means
// "from must finish before to starts" (to depends on from).
//
// The zero value is an empty graph ready to use. A Graph is not safe for
// concurrent mutation; concurrent reads (including Walk) are safe as long as
// nobody mutates the graph at the same time.
type Graph struct {
	// out and in hold the same edges indexed both ways so that dependency
	// and dependent queries are equally cheap. Every vertex has a (possibly
	// empty) entry in both maps; out's keys are the vertex set.
	out map[string]map[string]struct{}
	in  map[string]map[string]struct{}
}

// Edge is a directed edge: From must finish before To starts.
type Edge struct {
	From, To string
}

// New returns an empty graph.
func New() *Graph {
	return &Graph{
		out: map[string]map[string]struct{}{},
		in:  map[string]map[string]struct{}{},
	}
}

// Add adds vertex v. Adding an existing vertex is a no-op.
func (g *Graph) Add(v string) {
	if g.out == nil {
		// Lazy init keeps the zero value usable.
		g.out = map[string]map[string]struct{}{}
		g.in = map[string]map[string]struct{}{}
	}
	if _, ok := g.out[v]; ok {
		return
	}
	g.out[v] = map[string]struct{}{}
	g.in[v] = map[string]struct{}{}
}

// Connect adds the edge from -> to, adding either vertex if missing.
// Connecting an existing edge is a no-op. A self-edge (from == to) is stored
// and counts as a cycle.
func (g *Graph) Connect(from, to string) {
	g.Add(from)
	g.Add(to)
	g.out[from][to] = struct{}{}
	g.in[to][from] = struct{}{}
}

// Has reports whether v is a vertex of g.
func (g *Graph) Has(v string) bool {
	_, ok := g.out[v]
	return ok
}

// Vertices returns all vertex names, sorted.
func (g *Graph) Vertices() []string {
	return sortedKeys(g.out)
}

// Edges returns all edges sorted by From, then To.
func (g *Graph) Edges() []Edge {
	edges := []Edge{}
	for _, from := range g.Vertices() {
		for _, to := range sortedKeys(g.out[from]) {
			edges = append(edges, Edge{From: from, To: to})
		}
	}
	return edges
}

// DependenciesOf returns the direct predecessors of v (the vertices that
// must finish before v starts), sorted. Unknown vertices have none.
func (g *Graph) DependenciesOf(v string) []string {
	return sortedKeys(g.in[v])
}

// DependentsOf returns the direct successors of v (the vertices that wait
// for v), sorted. Unknown vertices have none.
func (g *Graph) DependentsOf(v string) []string {
	return sortedKeys(g.out[v])
}

// Ancestors returns every vertex v transitively depends on, sorted and
// excluding v itself even when v lies on a cycle.
func (g *Graph) Ancestors(v string) []string {
	return reach(g.in, []string{v}, false)
}

// Descendants returns every vertex that transitively depends on v, sorted
// and excluding v itself even when v lies on a cycle.
func (g *Graph) Descendants(v string) []string {
	return reach(g.out, []string{v}, false)
}

// Reverse returns a new graph with the same vertices and every edge flipped,
// which is the teardown order of g.
func (g *Graph) Reverse() *Graph {
	r := New()
	for v := range g.out {
		r.Add(v)
	}
	for from, tos := range g.out {
		for to := range tos {
			r.Connect(to, from)
		}
	}
	return r
}

// Subgraph returns the subgraph of g induced by keep: exactly those vertices
// and every edge of g between two of them. Names not in g are ignored.
func (g *Graph) Subgraph(keep []string) *Graph {
	s := New()
	for _, v := range keep {
		if g.Has(v) {
			s.Add(v)
		}
	}
	for from := range s.out {
		for to := range g.out[from] {
			if s.Has(to) {
				s.Connect(from, to)
			}
		}
	}
	return s
}

// WithDependencies returns the subgraph induced by selected plus all their
// ancestors: everything needed to bring the selection up. Names not in g are
// ignored.
func (g *Graph) WithDependencies(selected []string) *Graph {
	return g.Subgraph(reach(g.in, g.known(selected), true))
}

// WithDependents returns the subgraph induced by selected plus all their
// descendants: everything affected by changing the selection. Names not in g
// are ignored.
func (g *Graph) WithDependents(selected []string) *Graph {
	return g.Subgraph(reach(g.out, g.known(selected), true))
}

// known filters names down to vertices of g.
func (g *Graph) known(names []string) []string {
	var out []string
	for _, v := range names {
		if g.Has(v) {
			out = append(out, v)
		}
	}
	return out
}

// reach returns the vertices reachable from starts by following adj, sorted.
// The starts themselves are included only if includeStarts is set; otherwise
// they are excluded even when reachable through a cycle, matching the
// "excluding v" contract of Ancestors and Descendants.
func reach(adj map[string]map[string]struct{}, starts []string, includeStarts bool) []string {
	seen := map[string]struct{}{}
	queue := []string{}
	for _, s := range starts {
		if _, ok := adj[s]; !ok {
			continue
		}
		if _, ok := seen[s]; !ok {
			seen[s] = struct{}{}
			queue = append(queue, s)
		}
	}
	for len(queue) > 0 {
		v := queue[0]
		queue = queue[1:]
		for w := range adj[v] {
			if _, ok := seen[w]; !ok {
				seen[w] = struct{}{}
				queue = append(queue, w)
			}
		}
	}
	if !includeStarts {
		for _, s := range starts {
			delete(seen, s)
		}
	}
	return sortedKeys(seen)
}

// sortedKeys returns the keys of m in ascending order, never nil so callers
// (and JSON encoders) see an empty list rather than null.
func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// indexed is an immutable snapshot of a graph with vertices numbered in name
// order. Algorithms work on it so they use cheap int slices, and so index
// order equals name order, which makes "smallest index" mean "smallest name".
type indexed struct {
	names []string
	succ  [][]int // sorted ascending
	pred  [][]int // sorted ascending
}

// snapshot builds the indexed form of g.
func (g *Graph) snapshot() *indexed {
	names := g.Vertices()
	index := make(map[string]int, len(names))
	for i, n := range names {
		index[n] = i
	}
	ix := &indexed{
		names: names,
		succ:  make([][]int, len(names)),
		pred:  make([][]int, len(names)),
	}
	for i, n := range names {
		for w := range g.out[n] {
			ix.succ[i] = append(ix.succ[i], index[w])
		}
		for w := range g.in[n] {
			ix.pred[i] = append(ix.pred[i], index[w])
		}
		slices.Sort(ix.succ[i])
		slices.Sort(ix.pred[i])
	}
	return ix
}

// topoOrder returns the vertices in a topological order (Kahn's algorithm,
// ties broken by index) and whether every vertex was ordered; false means the
// graph has a cycle.
func (ix *indexed) topoOrder() ([]int, bool) {
	n := len(ix.names)
	indeg := make([]int, n)
	queue := make([]int, 0, n)
	for i := range n {
		indeg[i] = len(ix.pred[i])
		if indeg[i] == 0 {
			queue = append(queue, i)
		}
	}
	// queue doubles as the output: everything ever enqueued is ordered.
	for head := 0; head < len(queue); head++ {
		for _, w := range ix.succ[queue[head]] {
			indeg[w]--
			if indeg[w] == 0 {
				queue = append(queue, w)
			}
		}
	}
	return queue, len(queue) == n
}
