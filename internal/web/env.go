package web

import (
	"encoding/json"
	"fmt"
	"html/template"
	"net/http"
	"strconv"

	"github.com/pmezard/go-difflib/difflib"

	"knit.dev/knit/internal/knit"
	"knit.dev/knit/internal/store"
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
}

type envPage struct {
	ID, Team, Name string
	State          string
	Tone           Tone
	View           knit.EnvironmentView
	Nodes          []node
	Graph          template.JS // the nodes as JSON, for the layout script
	Revisions      []store.Revision
	Runs           []runItem
	DiffA, DiffB   int
	Live           string
	// ChangeSet is the change waiting to be approved at once, if any.
	ChangeSet *store.ChangeSet
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
	p, err := w.envPage(r, id)
	if err != nil {
		w.errorPage(rw, r, s, 0, err)
		return
	}
	w.render(rw, r, s, http.StatusOK, "environment", p.ID, "envs", p)
}

func (w *Web) envPage(r *http.Request, id string) (envPage, error) {
	ctx := r.Context()
	mark := w.envMark(ctx, id)
	v, err := w.k.Environment(ctx, id)
	if err != nil {
		return envPage{}, err
	}
	// The mark is taken before the view is read: a change in between
	// makes the live stream refresh the page at once.
	p := envPage{ID: v.ID, Team: v.Team, Name: v.Name, View: v, Live: "/env/" + v.ID + "/live?since=" + mark}
	running := v.LastRun != nil && v.LastRun.Status == store.StatusRunning
	p.State = envState(v.Status, running)
	p.Tone = toneOf(v.Status)
	if running {
		p.Tone = ToneBusy
	}
	p.Nodes = nodes(v)
	js, err := json.Marshal(p.Nodes)
	if err != nil {
		return p, err
	}
	p.Graph = template.JS(js)
	revs, err := w.k.Revisions(ctx, id, "", 20)
	if err != nil {
		return p, err
	}
	p.Revisions = revs.Items
	if len(p.Revisions) > 1 {
		p.DiffA, p.DiffB = p.Revisions[1].Number, p.Revisions[0].Number
	}
	sets, err := w.k.ChangeSets(ctx, id, 1, store.ChangeSetPending)
	if err != nil {
		return p, err
	}
	if len(sets) == 1 {
		p.ChangeSet = &sets[0]
	}
	runs, err := w.k.History(ctx, id, "", 15)
	if err != nil {
		return p, err
	}
	for _, r := range runs.Items {
		p.Runs = append(p.Runs, runItem{Run: r, Tone: toneOf(r.Status)})
	}
	return p, nil
}

// runItem is a run in a list, with its colour.
type runItem struct {
	store.Run
	Tone Tone
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
	Revisions []store.Revision
	Lines     []diffLine
	Same      bool
}

type diffLine struct {
	Kind string // add, del, ctx, hunk
	Text string
}

// diff shows the difference of the environment's file between two revisions.
func (w *Web) diff(rw http.ResponseWriter, r *http.Request, s *session) {
	id, err := w.envRef(r, s)
	if err != nil {
		w.errorPage(rw, r, s, 0, err)
		return
	}
	a, _ := strconv.Atoi(r.URL.Query().Get("a"))
	b, _ := strconv.Atoi(r.URL.Query().Get("b"))
	st := w.k.Store()
	ra, err := st.Revision(r.Context(), id, a)
	if err != nil {
		w.errorPage(rw, r, s, http.StatusNotFound, fmt.Errorf("%s has no revision %d", id, a))
		return
	}
	rb, err := st.Revision(r.Context(), id, b)
	if err != nil {
		w.errorPage(rw, r, s, http.StatusNotFound, fmt.Errorf("%s has no revision %d", id, b))
		return
	}
	revs, _ := w.k.Revisions(r.Context(), id, "", 100)
	p := diffPage{ID: id, A: ra.Number, B: rb.Number, Revisions: revs.Items}
	p.Lines = unifiedDiff(pretty(ra.Spec), pretty(rb.Spec), fmt.Sprintf("revision %d", ra.Number), fmt.Sprintf("revision %d", rb.Number))
	p.Same = len(p.Lines) == 0
	w.render(rw, r, s, http.StatusOK, "diff", fmt.Sprintf("%s: revision %d → %d", id, ra.Number, rb.Number), "envs", p)
}

// pretty indents a stored spec so a diff shows one field per line.
func pretty(spec []byte) string {
	var v any
	if json.Unmarshal(spec, &v) != nil {
		return string(spec) // an invalid file, as written
	}
	b, _ := json.MarshalIndent(v, "", "  ")
	return string(b) + "\n"
}

func unifiedDiff(a, b, nameA, nameB string) []diffLine {
	text, err := difflib.GetUnifiedDiffString(difflib.UnifiedDiff{A: difflib.SplitLines(a), B: difflib.SplitLines(b),
		FromFile: nameA, ToFile: nameB, Context: 3})
	if err != nil || text == "" {
		return nil
	}
	var out []diffLine
	for _, l := range difflib.SplitLines(text) {
		l = trimNL(l)
		kind := "ctx"
		switch {
		case len(l) >= 3 && (l[:3] == "---" || l[:3] == "+++"):
			kind = "file"
		case len(l) >= 2 && l[:2] == "@@":
			kind = "hunk"
		case len(l) > 0 && l[0] == '+':
			kind = "add"
		case len(l) > 0 && l[0] == '-':
			kind = "del"
		}
		out = append(out, diffLine{Kind: kind, Text: l})
	}
	return out
}

func trimNL(s string) string {
	for len(s) > 0 && (s[len(s)-1] == '\n' || s[len(s)-1] == '\r') {
		s = s[:len(s)-1]
	}
	return s
}
