package web

import (
	"knit.dev/knit/internal/health"
	"knit.dev/knit/internal/view"
)

// nodeHealth is a component's health as its graph node shows it: the
// worst verdict among its checks, and each check with what it saw (the
// engine masked the evidence before it was recorded).
type nodeHealth struct {
	Verdict string             `json:"verdict"`
	Tone    Tone               `json:"tone"`
	Checks  []view.HealthCheck `json:"checks"`
}

// graphHealth is the environment's health above its graph: its verdict
// and its own checks (those of no component).
type graphHealth struct {
	nodeHealth
	Components int // how many components have checks
}

// addHealth gives each node its component's checks from h, the last
// health check, and returns the environment's; nil when nothing was
// checked yet.
func addHealth(nodes []node, h *view.Health) *graphHealth {
	if h == nil {
		return nil
	}
	env := &graphHealth{nodeHealth: nodeHealth{Verdict: h.Verdict, Tone: toneOf(h.Verdict)}}
	at := map[string]int{}
	for i, n := range nodes {
		at[n.Name] = i
	}
	for _, c := range h.Checks {
		i, ok := at[c.Component]
		if c.Component == "" || !ok {
			env.Checks = append(env.Checks, c)
			continue
		}
		nh := nodes[i].Health
		if nh == nil {
			nh = &nodeHealth{Verdict: string(health.Successful)}
			nodes[i].Health = nh
			env.Components++
		}
		nh.Checks = append(nh.Checks, c)
		if health.Worse(health.Verdict(c.Verdict), health.Verdict(nh.Verdict)) {
			nh.Verdict = c.Verdict
		}
		nh.Tone = toneOf(nh.Verdict)
	}
	return env
}
