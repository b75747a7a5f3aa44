package web

import (
	"encoding/json"
	"fmt"
	"html/template"
	"net/http"
	"strconv"

	"knit.dev/knit/internal/knit"
	"knit.dev/knit/internal/store"
	"knit.dev/knit/internal/view"
)

// node is one component as the graph draws it.
type node struct {
	Name      string   `json:"name"`
	Type      string   `json:"type"`
	State     string   `json:"state"`
	Tone      Tone     `json:"tone"`
	Busy      bool     `json:"busy"`
	Why       string   `json:"why,omitempty"`
	Plan      string   `json:"plan,omitempty"`
	DependsOn []string `json:"dependsOn"`
	Href      string   `json:"href"`
	// Decide, for a component whose plan waits for a person, links to its
	// decide form on the page; Act is that link's words.
	Decide string `json:"decide,omitempty"`
	Act    string `json:"act,omitempty"`
	// Health is the component's in the last health check, nil without checks.
	Health *nodeHealth `json:"health,omitempty"`
}

type envPage struct {
	ID, Team, Name string
	State          string
	Tone           Tone
	View           knit.EnvironmentView
	Nodes          []node
	Graph          template.JS // the nodes and their layout as JSON, for the graph script
	Layout         *graphLayout
	Health         *graphHealth
	Revisions      []view.Revision
	Runs           []runItem
	// Decisions are the plans waiting for a person, with their forms.
	Decisions    []approvalItem
	DiffA, DiffB int
	Live         string
	// ChangeSet is the change waiting to be approved at once, if any.
	ChangeSet *view.ChangeSet
	// Rollout is the newest rollout by the environment's strategy, if any.
	Rollout *rolloutBar
}

func (w *Web) envRef(r *http.Request, s *session) (string, error) {
	team := r.PathValue("team")
	if err := canSee(s, team); err != nil {
		return "", err
	}
	return team + "/" + r.PathValue("env"), nil
}

// environment is one environment: its graph, revisions, runs and actions.
func (w *Web) environment(rw http.ResponseWriter, r *http.Request, s *session) {
	id, err := w.envRef(r, s)
	if err != nil {
		w.errorPage(rw, r, s, 0, err)
		return
	}
	p, err := w.envPage(r, s, id)
	if err != nil {
		w.errorPage(rw, r, s, 0, err)
		return
	}
	w.render(rw, r, s, http.StatusOK, "environment", p.ID, "envs", p)
}

func (w *Web) envPage(r *http.Request, s *session, id string) (envPage, error) {
	ctx := r.Context()
	mark := w.live.envMark(ctx, id)
	v, err := knit.NewRecords(w.k).Environment(ctx, id)
	if err != nil {
		return envPage{}, err
	}
	// The mark is taken before the view is read: a change in between
	// makes the live stream refresh the page at once.
	p := envPage{ID: v.ID, Team: v.Team, Name: v.Name, View: v}
	if !liveOff(r) {
		p.Live = "/env/" + v.ID + "/live?since=" + mark
	}
	running := v.LastRun != nil && v.LastRun.Status == store.StatusRunning
	p.State = envState(v.Status, running)
	p.Tone = toneOf(v.Status)
	if running {
		p.Tone = ToneBusy
	}
	p.Nodes = nodes(v)
	p.Health = addHealth(p.Nodes, v.Health)
	if p.Decisions, err = w.decisions(ctx, s, v.ID, "", "/env/"+v.ID); err != nil {
		return p, err
	}
	for _, d := range p.Decisions {
		for i := range p.Nodes {
			if p.Nodes[i].Name == d.Component {
				p.Nodes[i].Decide, p.Nodes[i].Act = fmt.Sprintf("#ap-%d", d.ID), "review the plan →"
				if s.CanAct {
					p.Nodes[i].Act = "approve or reject →"
				}
			}
		}
	}
	if p.Rollout, err = w.rolloutOf(ctx, v.ID); err != nil {
		return p, err
	}
	p.Layout = w.graphs.of(p.Nodes)
	js, err := json.Marshal(graphData{Layout: p.Layout, Nodes: p.Nodes})
	if err != nil {
		return p, err
	}
	p.Graph = template.JS(js)
	revs, err := knit.NewRecords(w.k).Revisions(ctx, id, "", 20)
	if err != nil {
		return p, err
	}
	p.Revisions = revs.Items
	if len(p.Revisions) > 1 {
		p.DiffA, p.DiffB = p.Revisions[1].Number, p.Revisions[0].Number
	}
	sets, err := knit.NewRecords(w.k).ChangeSets(ctx, id, 1, store.ChangeSetPending)
	if err != nil {
		return p, err
	}
	if len(sets) == 1 {
		p.ChangeSet = &sets[0]
	}
	runs, err := knit.NewRecords(w.k).History(ctx, id, "", 15)
	if err != nil {
		return p, err
	}
	for _, r := range runs.Items {
		c, err := w.commitOf(ctx, v.ID, p.Revisions, r.Revision)
		if err != nil {
			return p, err
		}
		p.Runs = append(p.Runs, runItem{Run: r, Tone: toneOf(r.Status), Commit: c})
	}
	return p, nil
}

// runItem is a run in a list, with its colour and the commit it applied.
type runItem struct {
	view.Run
	Tone   Tone
	Commit *commit
}

// nodes turns components into graph nodes.
func nodes(v knit.EnvironmentView) []node {
	out := make([]node, 0, len(v.Components))
	for _, c := range v.Components {
		st := componentState(c)
		n := node{Name: c.Name, Type: c.Type, State: st, Tone: toneOf(st), Busy: busy(st), Why: why(c),
			DependsOn: c.DependsOn, Href: "/env/" + v.ID + "/c/" + c.Name}
		if n.Type == "" {
			n.Type = "removed"
		}
		if n.DependsOn == nil {
			n.DependsOn = []string{}
		}
		if c.LastPlan != nil {
			n.Plan = fmt.Sprintf("+%d ~%d -%d", c.LastPlan.Add, c.LastPlan.Change, c.LastPlan.Destroy)
		}
		out = append(out, n)
	}
	return out
}

type diffPage struct {
	ID        string
	A, B      int
	Revisions []view.Revision
	Diff      knit.RevisionDiff
}

// diff shows the difference of the environment's file between two
// revisions, as written, by component.
func (w *Web) diff(rw http.ResponseWriter, r *http.Request, s *session) {
	id, err := w.envRef(r, s)
	if err != nil {
		w.errorPage(rw, r, s, 0, err)
		return
	}
	a, _ := strconv.Atoi(r.URL.Query().Get("a"))
	b, _ := strconv.Atoi(r.URL.Query().Get("b"))
	d, err := knit.NewRecords(w.k).Diff(r.Context(), id, a, b)
	if err != nil {
		w.errorPage(rw, r, s, http.StatusNotFound, err)
		return
	}
	revs, _ := knit.NewRecords(w.k).Revisions(r.Context(), id, "", 100)
	p := diffPage{ID: id, A: d.A, B: d.B, Revisions: revs.Items, Diff: d}
	w.render(rw, r, s, http.StatusOK, "diff", fmt.Sprintf("%s: revision %d → %d", id, d.A, d.B), "envs", p)
}
