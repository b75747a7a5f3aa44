package dag

import (
	"slices"
	"strings"
)

// MaxCycles bounds how many cycles Cycles reports, so a densely cyclic graph
// (whose elementary cycle count grows factorially) cannot hang the caller.
const MaxCycles = 1000

// CycleError reports that a graph is not acyclic. Cycles lists the
// offending elementary cycles in the format returned by Graph.Cycles.
type CycleError struct {
	Cycles [][]string
}

// Error renders every cycle closed on its first vertex, e.g.
// "cycle: a → b → c → a; cycle: x → x".
func (e *CycleError) Error() string {
	if len(e.Cycles) == 0 {
		return "cycle"
	}
	parts := make([]string, len(e.Cycles))
	for i, c := range e.Cycles {
		closed := append(slices.Clone(c), c[0])
		parts[i] = "cycle: " + strings.Join(closed, " → ")
	}
	return strings.Join(parts, "; ")
}

// Cycles returns every elementary cycle of g, at most MaxCycles of them.
// Each cycle is listed in edge order ([a b c] means a->b->c->a) and rotated
// to start at its smallest vertex name; a self-edge gives [a]. The cycles are
// sorted lexicographically. If the cap is hit, the result is the first
// MaxCycles cycles of a deterministic enumeration, still sorted. An acyclic
// graph returns an empty slice.
func (g *Graph) Cycles() [][]string {
	return g.snapshot().cycles(MaxCycles)
}

// cycles converts the index cycles found by johnson into sorted name lists.
func (ix *indexed) cycles(limit int) [][]string {
	found := ix.johnson(limit)
	out := make([][]string, len(found))
	for i, c := range found {
		names := make([]string, len(c))
		for j, v := range c {
			names[j] = ix.names[v]
		}
		out[i] = names
	}
	slices.SortFunc(out, slices.Compare[[]string])
	return out
}

// johnson enumerates elementary cycles with Johnson's algorithm (1975).
// For each start s in index order it searches for cycles through s that use
// only vertices > s, so every cycle is found exactly once and already begins
// at its smallest vertex. The search is confined to s's strongly connected
// component, which skips acyclic parts of the graph entirely.
func (ix *indexed) johnson(limit int) [][]int {
	comp, members := ix.components()
	n := len(ix.names)
	blocked := make([]bool, n)
	blockedBy := make([][]int, n) // Johnson's B sets
	var (
		out   [][]int
		stack []int
		s     int
	)
	allowed := func(v int) bool { return v >= s && comp[v] == comp[s] }

	var unblock func(u int)
	unblock = func(u int) {
		blocked[u] = false
		list := blockedBy[u]
		blockedBy[u] = nil
		for _, w := range list {
			if blocked[w] {
				unblock(w)
			}
		}
	}

	var circuit func(v int) bool
	circuit = func(v int) bool {
		found := false
		stack = append(stack, v)
		blocked[v] = true
		for _, w := range ix.succ[v] {
			if len(out) >= limit {
				break // state no longer matters: enumeration stops
			}
			if !allowed(w) {
				continue
			}
			if w == s {
				out = append(out, slices.Clone(stack))
				found = true
			} else if !blocked[w] && circuit(w) {
				found = true
			}
		}
		if found {
			unblock(v)
		} else {
			// v stays blocked until some successor gets unblocked, which is
			// what keeps Johnson from re-exploring dead ends.
			for _, w := range ix.succ[v] {
				if allowed(w) && !slices.Contains(blockedBy[w], v) {
					blockedBy[w] = append(blockedBy[w], v)
				}
			}
		}
		stack = stack[:len(stack)-1]
		return found
	}

	for s = 0; s < n && len(out) < limit; s++ {
		mem := members[comp[s]]
		if len(mem) == 1 && !slices.Contains(ix.succ[s], s) {
			continue // trivial component without a self-edge: no cycle
		}
		for _, v := range mem {
			blocked[v] = false
			blockedBy[v] = nil
		}
		circuit(s)
	}
	return out
}

// components computes strongly connected components with Tarjan's
// algorithm, returning each vertex's component id and each component's
// members.
func (ix *indexed) components() (comp []int, members [][]int) {
	n := len(ix.names)
	comp = make([]int, n)
	index := make([]int, n)
	low := make([]int, n)
	onStack := make([]bool, n)
	for i := range index {
		index[i] = -1
	}
	var (
		stack []int
		next  int
	)
	var visit func(v int)
	visit = func(v int) {
		index[v], low[v] = next, next
		next++
		stack = append(stack, v)
		onStack[v] = true
		for _, w := range ix.succ[v] {
			if index[w] < 0 {
				visit(w)
				low[v] = min(low[v], low[w])
			} else if onStack[w] {
				low[v] = min(low[v], index[w])
			}
		}
		if low[v] != index[v] {
			return
		}
		id := len(members)
		var mem []int
		for {
			w := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			onStack[w] = false
			comp[w] = id
			mem = append(mem, w)
			if w == v {
				break
			}
		}
		members = append(members, mem)
	}
	for v := range n {
		if index[v] < 0 {
			visit(v)
		}
	}
	return comp, members
}
