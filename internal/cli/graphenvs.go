package cli

import (
	"context"

	"knit.dev/knit/internal/dag"
	"knit.dev/knit/internal/knit"
)

// environmentsGraph is the environment-level graph as b sees it: every
// environment it lists, and an edge from each producer to each consumer
// that reads outputs it exports (its view's consumers).
func environmentsGraph(ctx context.Context, b backend) (graphView, error) {
	g := dag.New()
	status := map[string]string{}
	var ids []string
	for f := (knit.EnvironmentFilter{Limit: 1000}); ; {
		page, err := b.Environments(ctx, f)
		if err != nil {
			return graphView{}, err
		}
		for _, e := range page.Items {
			g.Add(e.ID)
			ids = append(ids, e.ID)
			status[e.ID] = envLabel(string(e.Status))
		}
		if page.Next == "" {
			break
		}
		f.After = page.Next
	}
	for _, id := range ids {
		v, err := b.Environment(ctx, id)
		if err != nil {
			return graphView{}, err
		}
		for _, c := range v.Consumers {
			if g.Has(c) {
				g.Connect(id, c)
			}
		}
	}
	v, err := newGraphView("environments", g, func(n string) string { return status[n] })
	v.nodes = "environments"
	return v, err
}

// envLabel is an environment's status as people read it.
func envLabel(s string) string {
	switch s {
	case "":
		return "new"
	case "provisioned":
		return "applied"
	}
	return s
}
