package dag

// Levels returns the vertices grouped into topological levels: level 0 holds
// the vertices with no dependencies, and level n holds the vertices whose
// deepest dependency is at level n-1. Each level is sorted. Everything in a
// level can run in parallel once the previous levels are done (Walk does
// better by not waiting for whole levels). An empty graph has no levels.
//
// If g has a cycle, Levels returns nil and a *CycleError listing the cycles.
func (g *Graph) Levels() ([][]string, error) {
	ix := g.snapshot()
	order, ok := ix.topoOrder()
	if !ok {
		return nil, &CycleError{Cycles: ix.cycles(MaxCycles)}
	}
	depth := make([]int, len(ix.names))
	var levels [][]string
	// order is topological, so every dependency's depth is final before
	// its dependents are visited.
	for _, v := range order {
		d := 0
		for _, p := range ix.pred[v] {
			d = max(d, depth[p]+1)
		}
		depth[v] = d
		for len(levels) <= d {
			levels = append(levels, nil)
		}
	}
	// Filling in index order keeps each level sorted by name for free.
	for v, d := range depth {
		levels[d] = append(levels[d], ix.names[v])
	}
	return levels, nil
}
