package web

import (
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"slices"
	"sync"

	"knit.dev/knit/internal/dag"
)

// graphLayout is where an environment's graph draws each component: the
// engine's levels as columns (a component one past its deepest
// dependency) and each component's place in its column, ordered so edges
// cross little. The page positions the boxes from it in one pass, with no
// layout library, at any size; Key names the graph's shape, so a live
// refresh of the same shape patches the drawn nodes instead of drawing
// anew.
type graphLayout struct {
	Key     string     `json:"key"`
	Columns [][]string `json:"columns"`
}

// graphData is what the environment page hands its graph script.
type graphData struct {
	Layout *graphLayout `json:"layout"`
	Nodes  []node       `json:"nodes"`
}

// bigGraph is the size past which an environment's page offers a search
// of its graph's components.
const bigGraph = 40

// layoutCacheSize bounds the layouts kept: one per graph shape (an
// environment's revision) recently shown.
const layoutCacheSize = 256

// layouts caches graph layouts by shape. It is safe for concurrent use.
type layouts struct {
	mu    sync.Mutex
	byKey map[string]*graphLayout
	order []string // oldest first, for eviction
}

// of is the layout of the graph of ns: from the cache when this shape
// was laid out before.
func (c *layouts) of(ns []node) *graphLayout {
	key := shapeKey(ns)
	c.mu.Lock()
	l, ok := c.byKey[key]
	c.mu.Unlock()
	if ok {
		return l
	}
	l = &graphLayout{Key: key, Columns: layOut(ns)}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.byKey == nil {
		c.byKey = map[string]*graphLayout{}
	}
	if _, ok := c.byKey[key]; !ok {
		c.byKey[key] = l
		c.order = append(c.order, key)
		if len(c.order) > layoutCacheSize {
			delete(c.byKey, c.order[0])
			c.order = c.order[1:]
		}
	}
	return l
}

// shapeKey digests the graph's shape: its nodes' names and dependencies,
// in order.
func shapeKey(ns []node) string {
	h := sha256.New()
	for _, n := range ns {
		h.Write([]byte(n.Name))
		for _, d := range n.DependsOn {
			h.Write([]byte{0})
			h.Write([]byte(d))
		}
		h.Write([]byte{1})
	}
	return hex.EncodeToString(h.Sum(nil)[:12])
}

// orderSweeps is how many times columns are reordered by their
// neighbours' places (alternately from the left and from the right).
const orderSweeps = 6

// layOut puts the nodes in columns by the engine's levels (dependencies
// on nodes not in the graph ignored) and orders each column by the mean
// place of each node's neighbours in the columns already ordered (the
// barycentre heuristic), sweeping left to right and back. A graph with a
// cycle (which validation refuses) is one column in its order.
func layOut(ns []node) [][]string {
	g := dag.New()
	for _, n := range ns {
		g.Add(n.Name)
	}
	for _, n := range ns {
		for _, d := range n.DependsOn {
			if g.Has(d) && d != n.Name {
				g.Connect(d, n.Name)
			}
		}
	}
	cols, err := g.Levels()
	if len(ns) == 0 {
		return [][]string{}
	}
	if err != nil {
		col := make([]string, len(ns))
		for i, n := range ns {
			col[i] = n.Name
		}
		return [][]string{col}
	}
	pos := map[string]float64{} // a node's place in its column, from 0 to 1
	place := func(col []string) {
		for i, v := range col {
			pos[v] = (float64(i) + 0.5) / float64(len(col))
		}
	}
	for _, col := range cols {
		place(col)
	}
	for sweep := range orderSweeps {
		forward := sweep%2 == 0
		for i := range cols {
			c := i
			if !forward {
				c = len(cols) - 1 - i
			}
			neighbours := g.DependenciesOf
			if !forward {
				neighbours = g.DependentsOf
			}
			order(cols[c], neighbours, pos)
			place(cols[c])
		}
	}
	return cols
}

// order sorts col by the mean place of each node's neighbours; a node
// without any keeps its own place.
func order(col []string, neighbours func(string) []string, pos map[string]float64) {
	bary := make(map[string]float64, len(col))
	for _, v := range col {
		ns := neighbours(v)
		if len(ns) == 0 {
			bary[v] = pos[v]
			continue
		}
		sum := 0.0
		for _, u := range ns {
			sum += pos[u]
		}
		bary[v] = sum / float64(len(ns))
	}
	slices.SortStableFunc(col, func(a, b string) int { return cmp.Compare(bary[a], bary[b]) })
}
