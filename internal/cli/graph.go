package cli

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"knit.dev/knit/internal/dag"
	"knit.dev/knit/internal/knit"
)

func newGraphCmd(d *deps) *cobra.Command {
	var file, format string
	var envs bool
	cmd := &cobra.Command{
		Use:   "graph (-f FILE | ENV | --environments) [--format text|dot|mermaid|json]",
		Short: "Show an environment's components and their dependencies",
		Long: `Print the dependency graph of an environment, from a file or, for ENV, as
it is applied (locally, or on --server): components by level (level 0 has no
dependencies; each level needs only earlier ones) and the edges that
dependsOn and valueFrom create. dot feeds Graphviz; mermaid pastes into
Markdown; json is for programs.

With --environments, the graph of environments instead (locally, or on
--server): an edge from each producer to each environment that reads
outputs it exports (valueFrom {environment, output}), each node with its
status.`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			render, ok := graphFormats[format]
			if !ok {
				return fmt.Errorf("unknown format %q: use text, dot, mermaid or json", format)
			}
			var view graphView
			var err error
			switch {
			case envs && (file != "" || len(args) > 0):
				return fmt.Errorf("--environments draws every environment: pass no -f FILE or ENV")
			case envs:
				err = d.withBackend(cmd.Context(), "text", func(b backend) error {
					view, err = environmentsGraph(cmd.Context(), b)
					return err
				})
			case file != "" && len(args) > 0:
				return fmt.Errorf("pass -f FILE or ENV, not both")
			case file != "":
				env, lerr := d.loadEnv(file)
				if lerr != nil {
					return lerr
				}
				view, err = newGraphView(env.ID(), env.Graph(), func(n string) string { return env.Component(n).Type })
			case len(args) == 1:
				err = d.withBackend(cmd.Context(), "text", func(b backend) error {
					view, err = appliedGraph(cmd.Context(), b, args[0])
					return err
				})
			default:
				return fmt.Errorf("which environment? pass -f FILE or ENV (team/env)")
			}
			if err != nil {
				return err
			}
			return render(d.stdout, view)
		},
	}
	cmd.Flags().StringVarP(&file, "file", "f", "", "environment file")
	cmd.Flags().BoolVar(&envs, "environments", false, "the graph of environments reading each other's outputs")
	cmd.Flags().StringVar(&format, "format", "text", "text, dot, mermaid or json")
	cmd.Flags().StringVarP(&format, "output", "o", "text", "same as --format")
	return cmd
}

// appliedGraph is the graph of environment ref as applied: its components
// (those removed from the file left out) and their dependencies, from the
// environment's view, which a server serves as well.
func appliedGraph(ctx context.Context, b backend, ref string) (graphView, error) {
	v, err := b.Environment(ctx, ref)
	if err != nil {
		return graphView{}, err
	}
	types := map[string]string{}
	g := viewGraph(v, func(c knit.ComponentView) bool {
		types[c.Name] = c.Type
		return !c.Removed
	})
	return newGraphView(v.ID, g, func(n string) string { return types[n] })
}

// viewGraph is the dependency graph of an environment's view: the
// components keep accepts and the dependencies between them.
func viewGraph(v knit.EnvironmentView, keep func(knit.ComponentView) bool) *dag.Graph {
	g := dag.New()
	for _, c := range v.Components {
		if keep(c) {
			g.Add(c.Name)
		}
	}
	for _, c := range v.Components {
		for _, dep := range c.DependsOn {
			if g.Has(dep) && g.Has(c.Name) {
				g.Connect(dep, c.Name)
			}
		}
	}
	return g
}

type graphNode struct {
	Name      string   `json:"name"`
	Type      string   `json:"type"`
	DependsOn []string `json:"dependsOn"`
	Level     int      `json:"level"`
}

type graphView struct {
	Environment string      `json:"environment"`
	Nodes       []graphNode `json:"nodes"`
	Levels      [][]string  `json:"levels"`
	// nodes is what the nodes are, for people ("" means components).
	nodes string
}

// newGraphView lays out g, the graph of environment id, by level.
func newGraphView(id string, g *dag.Graph, typeOf func(string) string) (graphView, error) {
	levels, err := g.Levels()
	if err != nil {
		return graphView{}, err
	}
	levelOf := map[string]int{}
	for i, l := range levels {
		for _, n := range l {
			levelOf[n] = i
		}
	}
	v := graphView{Environment: id, Levels: levels}
	for _, l := range levels {
		for _, n := range l {
			deps := g.DependenciesOf(n)
			if deps == nil {
				deps = []string{}
			}
			v.Nodes = append(v.Nodes, graphNode{Name: n, Type: typeOf(n), DependsOn: deps, Level: levelOf[n]})
		}
	}
	return v, nil
}

var graphFormats = map[string]func(io.Writer, graphView) error{
	"text":    graphText,
	"json":    func(w io.Writer, v graphView) error { return writeJSON(w, v) },
	"dot":     graphDot,
	"mermaid": graphMermaid,
}

func graphText(w io.Writer, v graphView) error {
	what := v.nodes
	if what == "" {
		what = "components"
	}
	fmt.Fprintf(w, "%s: %d %s in %d levels\n", v.Environment, len(v.Nodes), what, len(v.Levels))
	width := 0
	for _, n := range v.Nodes {
		width = max(width, len(n.Name)+len(n.Type)+3)
	}
	level := -1
	for _, n := range v.Nodes {
		if n.Level != level {
			level = n.Level
			fmt.Fprintf(w, "\nlevel %d\n", level)
		}
		label := fmt.Sprintf("%s (%s)", n.Name, n.Type)
		if len(n.DependsOn) == 0 {
			fmt.Fprintf(w, "  %s\n", label)
			continue
		}
		fmt.Fprintf(w, "  %-*s  ← %s\n", width, label, strings.Join(n.DependsOn, ", "))
	}
	return nil
}

func graphDot(w io.Writer, v graphView) error {
	fmt.Fprintf(w, "digraph %q {\n  rankdir=LR;\n  node [shape=box];\n", v.Environment)
	for _, n := range v.Nodes {
		fmt.Fprintf(w, "  %q [label=\"%s\\n(%s)\"];\n", n.Name, n.Name, n.Type)
	}
	for _, n := range v.Nodes {
		for _, dep := range n.DependsOn {
			fmt.Fprintf(w, "  %q -> %q;\n", dep, n.Name)
		}
	}
	fmt.Fprintln(w, "}")
	return nil
}

func graphMermaid(w io.Writer, v graphView) error {
	fmt.Fprintln(w, "graph LR")
	for _, n := range v.Nodes {
		fmt.Fprintf(w, "  %s[\"%s (%s)\"]\n", mermaidID(n.Name), n.Name, n.Type)
	}
	for _, n := range v.Nodes {
		for _, dep := range n.DependsOn {
			fmt.Fprintf(w, "  %s --> %s\n", mermaidID(dep), mermaidID(n.Name))
		}
	}
	return nil
}

// mermaidKeywords are words Mermaid reads as syntax where a node id stands.
var mermaidKeywords = map[string]bool{
	"end": true, "graph": true, "flowchart": true, "subgraph": true, "direction": true,
	"style": true, "class": true, "classdef": true, "linkstyle": true, "click": true, "call": true, "href": true,
}

// mermaidID turns a component name into a Mermaid node id: ids may not
// contain '-', which names often do, nor be a keyword such as "end". The
// name itself is the node's label.
func mermaidID(name string) string {
	id := strings.NewReplacer("-", "_", "/", "__").Replace(name)
	if mermaidKeywords[id] {
		id += "_"
	}
	return id
}
