package web

import (
	"fmt"
	"net/http"

	"knit.dev/knit/internal/httperr"
	"knit.dev/knit/internal/knit"
	"knit.dev/knit/internal/view"
)

// comparePage picks two environments and shows what making A look like B
// would change (knit diff A B).
type comparePage struct {
	Envs     []string // the environments the token sees
	A, B     string   // as asked (team/env, maybe @REV)
	Diff     *knit.EnvDiff
	Error    string
	Sections []compareSection // the environment's fields, then each component that differs
	Same     []string         // components the same in both
}

// compareSection is the environment or one component, its values as shown.
type compareSection struct {
	Title   string
	Change  string // added, removed, changed, same (or "environment")
	Note    string
	Fields  []compareRow
	Outputs []compareRow
}

// compareRow is one field or output: A's value and B's as shown.
type compareRow struct {
	Name, A, B string
	Same       bool
}

// compare shows the diff of ?a= and ?b= once both are picked; an
// environment the token may not see is refused like an unknown one is
// in the API (the library decides, in the same words either way).
func (w *Web) compare(rw http.ResponseWriter, r *http.Request, s *session) {
	envs, err := w.k.Environments(r.Context(), knit.EnvironmentFilter{Limit: 1000})
	if err != nil {
		w.errorPage(rw, r, s, 0, err)
		return
	}
	p := comparePage{A: r.URL.Query().Get("a"), B: r.URL.Query().Get("b")}
	for _, e := range envs.Items {
		p.Envs = append(p.Envs, e.ID)
	}
	code := http.StatusOK
	if p.A != "" && p.B != "" {
		d, err := w.diffOf(r, p.A, p.B)
		if err != nil {
			code, p.Error = statusOf(err), err.Error()
		} else {
			p.Diff = &d
			p.Sections, p.Same = compareSections(d)
		}
	}
	title := "Compare environments"
	if p.Diff != nil {
		title = fmt.Sprintf("%s → %s", p.Diff.A.Env, p.Diff.B.Env)
	}
	w.render(rw, r, s, code, "compare", title, "compare", p)
}

func (w *Web) diffOf(r *http.Request, a, b string) (knit.EnvDiff, error) {
	var req knit.EnvDiffRequest
	var err error
	if req.A, req.ARev, err = knit.ParseDiffID(a); err != nil {
		return knit.EnvDiff{}, badSide{err}
	}
	if req.B, req.BRev, err = knit.ParseDiffID(b); err != nil {
		return knit.EnvDiff{}, badSide{err}
	}
	return knit.NewRecords(w.k).DiffEnvironments(r.Context(), req)
}

// compareSections lays the diff out as the page reads it, A → B.
func compareSections(d knit.EnvDiff) ([]compareSection, []string) {
	var out []compareSection
	var same []string
	if len(d.Environment) > 0 {
		out = append(out, compareSection{Title: "environment", Change: "changed", Fields: fieldRows(d.Environment)})
	}
	for _, c := range d.Components {
		if c.Change == view.ComponentSame && !c.OutputsDiffer() {
			same = append(same, c.Name)
			continue
		}
		sec := compareSection{Title: "component " + c.Name, Change: c.Change, Fields: fieldRows(c.Fields)}
		switch c.Change {
		case view.ComponentAdded:
			sec.Note = "only in " + d.B.Env + ": would be added"
		case view.ComponentRemoved:
			sec.Note, sec.Fields = "only in "+d.A.Env+": would be removed", nil
		case view.ComponentSame:
			sec.Note = "same spec; live outputs differ"
		}
		for _, o := range c.Outputs {
			sec.Outputs = append(sec.Outputs, compareRow{Name: o.Name, Same: o.Same,
				A: o.ShownA(), B: o.ShownB()})
		}
		out = append(out, sec)
	}
	return out, same
}

func fieldRows(fs []view.FieldDiff) []compareRow {
	rows := make([]compareRow, 0, len(fs))
	for _, f := range fs {
		rows = append(rows, compareRow{Name: f.Field, A: f.ShownA(), B: f.ShownB()})
	}
	return rows
}

// badSide is a side the request names wrongly: a 400, in its own words.
type badSide struct{ error }

func (badSide) Is(target error) bool { return target == httperr.ErrBadRequest }
