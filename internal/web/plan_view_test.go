package web

import (
	"bytes"
	"html/template"
	"regexp"
	"strings"
	"testing"

	"knit.dev/knit/internal/runner"
)

// The component page's plan shows each value change old → new (as the
// runner masked it) and the plan's notes.
func TestComponentPlanShowsValueChangesAndNotes(t *testing.T) {
	funcs := template.FuncMap{"ago": func(any) string { return "" }, "when": func(any) string { return "" }}
	tpl := template.Must(template.New("component").Funcs(funcs).ParseFS(templateFS, "templates/partials/*.html", "templates/component.html"))
	page := componentPage{EnvID: "t/e", Name: "podinfo", Plan: &runner.Plan{Change: 1,
		Resources: []runner.ResourceChange{{Address: "Deployment/web/podinfo", Action: runner.ActionUpdate,
			Attributes: []string{"spec.replicas", "data.pw"},
			Changes: []runner.ValueChange{{Path: "spec.replicas", Old: "1", New: "3"},
				{Path: "data.pw", Old: "(sensitive)", New: "(sensitive)", Sensitive: true}}}},
		Notes: []string{"pre-upgrade hook Job/web/migrate runs at apply"}}}
	var out bytes.Buffer
	if err := tpl.ExecuteTemplate(&out, "content", map[string]any{"Page": page}); err != nil {
		t.Fatal(err)
	}
	// The text a reader sees, cell by cell: tags become spaces.
	text := strings.Join(strings.Fields(regexp.MustCompile(`<[^>]*>`).ReplaceAllString(out.String(), " ")), " ")
	for _, want := range []string{"spec.replicas 1 → 3", "data.pw (sensitive) → (sensitive)", "pre-upgrade hook Job/web/migrate runs at apply"} {
		if !strings.Contains(text, want) {
			t.Errorf("the plan view lacks %q:\n%s", want, out.String())
		}
	}
}
