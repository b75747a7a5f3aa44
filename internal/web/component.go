package web

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"knit.dev/knit/internal/engine"
	"knit.dev/knit/internal/knit"
	"knit.dev/knit/internal/runner"
	"knit.dev/knit/internal/spec"
	"knit.dev/knit/internal/view"
)

// input is one variable of a component: a literal, or valueFrom a producer.
type input struct {
	Name     string
	Value    string
	From     string // "db.host"
	Producer string // link to the producing component
}

type output struct {
	Name, Value string
	Sensitive   bool
}

type historyItem struct {
	view.ComponentRun
	Tone    Tone
	LogTail string
}

type componentPage struct {
	EnvID, Name, Type string
	State             string
	Tone              Tone
	Why               string
	View              knit.ComponentView
	Inputs            []input
	Outputs           []output
	Plan              *runner.Plan
	Drift             string
	DriftDetail       []runner.ResourceChange
	History           []historyItem
	Log               string
	LogRun            string
	// Decisions are the component's plans waiting for a person.
	Decisions []approvalItem
}

// logTailLines is how much of a log the panel shows.
const logTailLines = 40

// component is one component's panel.
func (w *Web) component(rw http.ResponseWriter, r *http.Request, s *session) {
	id, err := w.envRef(r, s)
	if err != nil {
		w.errorPage(rw, r, s, 0, err)
		return
	}
	p, err := w.componentPage(r, s, id, r.PathValue("name"))
	if err != nil {
		w.errorPage(rw, r, s, 0, err)
		return
	}
	w.render(rw, r, s, http.StatusOK, "component", p.Name+" in "+p.EnvID, "envs", p)
}

func (w *Web) componentPage(r *http.Request, s *session, id, name string) (componentPage, error) {
	ctx := r.Context()
	v, err := knit.NewRecords(w.k).Environment(ctx, id)
	if err != nil {
		return componentPage{}, err
	}
	i := slices.IndexFunc(v.Components, func(c knit.ComponentView) bool { return c.Name == name })
	if i < 0 {
		return componentPage{}, fmt.Errorf("%w: %s has no component %q", knit.ErrNotFound, id, name)
	}
	c := v.Components[i]
	st := componentState(c)
	p := componentPage{EnvID: v.ID, Name: c.Name, Type: c.Type, State: st, Tone: toneOf(st), Why: why(c), View: c, Plan: c.LastPlan}
	if env, _, err := w.k.AppliedSpec(ctx, id); err == nil {
		if def := env.Component(name); def != nil {
			p.Inputs = inputs(v.ID, def)
		}
	}
	if p.Decisions, err = w.decisions(ctx, s, v.ID, name, "/env/"+v.ID+"/c/"+name); err != nil {
		return p, err
	}
	outs, err := knit.NewRecords(w.k).Outputs(ctx, id, name)
	if err != nil && !errors.Is(err, knit.ErrNotFound) {
		return p, err
	}
	for oname, o := range outs[name] {
		p.Outputs = append(p.Outputs, output{Name: oname, Value: valueText(o.Value), Sensitive: o.Sensitive})
	}
	slices.SortFunc(p.Outputs, func(a, b output) int { return strings.Compare(a.Name, b.Name) })
	if d, err := knit.NewRecords(w.k).LastDrift(ctx, id); err == nil && d != nil {
		p.Drift = driftWords(d, name)
	}
	runs, err := knit.NewRecords(w.k).History(ctx, id, "", 10)
	if err != nil {
		return p, err
	}
	for _, run := range runs.Items {
		rec, err := w.k.RunRecord(ctx, run.ID)
		if err != nil {
			return p, err
		}
		for _, cr := range rec.Components {
			if cr.Component != name {
				continue
			}
			h := historyItem{ComponentRun: cr, Tone: toneOf(cr.Status), LogTail: tail(cr.Log, logTailLines)}
			if cr.Operation == "drift" && cr.Status == string(engine.Drifted) && p.DriftDetail == nil {
				var pl runner.Plan
				if json.Unmarshal(cr.PlanSummary, &pl) == nil {
					p.DriftDetail = pl.Resources
				}
			}
			p.History = append(p.History, h)
		}
	}
	// The newest run that printed something: a run that stopped at an
	// approval gate may have nothing to show.
	for _, h := range p.History {
		if strings.TrimSpace(h.LogTail) != "" {
			p.Log, p.LogRun = h.LogTail, h.RunID
			break
		}
	}
	return p, nil
}

func inputs(envID string, def *spec.Component) []input {
	var out []input
	for _, vr := range def.Variables {
		in := input{Name: vr.Name}
		if ref, ok := spec.ParseValueFrom(vr.ValueFrom); ok {
			in.From, in.Producer = string(vr.ValueFrom), "/env/"+envID+"/c/"+ref.Component
		} else if er, ok := vr.ValueFrom.EnvOutput(); ok {
			in.From, in.Producer = er.String(), "/env/"+er.Environment()+"/c/"+er.Output.Component
		} else {
			in.Value = valueText(vr.Value)
		}
		out = append(out, in)
	}
	return out
}

func valueText(v any) string {
	if s, ok := v.(string); ok {
		return s
	}
	b, _ := json.Marshal(v)
	return string(b)
}

func driftWords(d *knit.DriftView, name string) string {
	when := d.CheckedAt.UTC().Format("2006-01-02 15:04 UTC")
	switch {
	case slices.Contains(d.Drifted, name):
		return "drifted: reality differs from the last apply (checked " + when + ")"
	case slices.Contains(d.Affected, name):
		return "affected by upstream drift (checked " + when + ")"
	case slices.Contains(d.Failed, name):
		return "the drift check failed (" + when + ")"
	case slices.Contains(d.Unknown, name):
		return "drift unknown: nothing compares it with reality (a script without plan; checked " + when + ")"
	}
	return "in sync at the last drift check (" + when + ")"
}

// tail keeps the last n lines of a log.
func tail(log string, n int) string {
	log = strings.TrimRight(log, "\n")
	lines := strings.Split(log, "\n")
	if len(lines) > n {
		lines = append([]string{fmt.Sprintf("… %d earlier lines", len(lines)-n)}, lines[len(lines)-n:]...)
	}
	return strings.Join(lines, "\n")
}
