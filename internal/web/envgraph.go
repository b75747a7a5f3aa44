package web

import (
	"encoding/json"
	"html/template"
	"net/http"

	"knit.dev/knit/internal/engine"
	"knit.dev/knit/internal/knit"
)

// envGraphPage is the environment-level graph: which environments read
// which (producer → consumer), drawn by graph.js from a layout made on
// the server, as an environment's component graph is.
type envGraphPage struct {
	Nodes  []node
	Edges  int
	Graph  template.JS
	Layout *graphLayout
	Live   string
}

// envGraph shows every environment the session sees with the
// environments it reads outputs of; an environment of another team at
// the other end of an edge is named only.
func (w *Web) envGraph(rw http.ResponseWriter, r *http.Request, s *session) {
	ctx := r.Context()
	mark := w.live.allMark(ctx)
	g, err := knit.NewConsumers(w.k).Graph(ctx)
	if err != nil {
		w.errorPage(rw, r, s, 0, err)
		return
	}
	p := envGraphPage{Nodes: make([]node, 0, len(g))}
	for _, e := range g {
		n := node{Name: e.ID, Type: "environment", State: engine.EnvLabel(e.Status), Tone: toneOf(e.Status),
			DependsOn: append([]string{}, e.Reads...), Href: "/env/" + e.ID}
		if e.Hidden {
			n.Type, n.State, n.Tone = "another team", "not shown", ToneNeutral
		}
		p.Edges += len(e.Reads)
		p.Nodes = append(p.Nodes, n)
	}
	p.Layout = w.graphs.of(p.Nodes)
	js, err := json.Marshal(graphData{Layout: p.Layout, Nodes: p.Nodes})
	if err != nil {
		w.errorPage(rw, r, s, 0, err)
		return
	}
	p.Graph = template.JS(js)
	if !liveOff(r) {
		p.Live = "/live?since=" + mark
	}
	w.render(rw, r, s, http.StatusOK, "envgraph", "Environment graph", "envs", p)
}
