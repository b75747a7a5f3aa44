package web

import (
	"bytes"
	"html"
	"html/template"
	"regexp"
	"strings"
	"testing"

	"knit.dev/knit/internal/runner"
)

// A teardown plan's kept resources read as kept, with why, never as
// deleted.
func TestComponentPlanShowsKeptResources(t *testing.T) {
	funcs := template.FuncMap{"ago": func(any) string { return "" }, "when": func(any) string { return "" }}
	tpl := template.Must(template.New("component").Funcs(funcs).ParseFS(templateFS, "templates/partials/*.html", "templates/component.html"))
	page := componentPage{EnvID: "t/e", Name: "cert-manager", Plan: &runner.Plan{Destroy: 1, Destroying: true,
		Resources: []runner.ResourceChange{{Address: "Deployment/cm/webhook", Action: runner.ActionDelete},
			{Address: "CustomResourceDefinition/issuers.cert-manager.io", Action: runner.ActionKeep,
				Reason: "helm.sh/resource-policy: keep (Helm's uninstall leaves it)"}}}}
	var out bytes.Buffer
	if err := tpl.ExecuteTemplate(&out, "content", map[string]any{"Page": page}); err != nil {
		t.Fatal(err)
	}
	text := html.UnescapeString(strings.Join(strings.Fields(regexp.MustCompile(`<[^>]*>`).ReplaceAllString(out.String(), " ")), " "))
	want := "keep CustomResourceDefinition/issuers.cert-manager.io (helm.sh/resource-policy: keep (Helm's uninstall leaves it))"
	if !strings.Contains(text, want) {
		t.Errorf("the plan view lacks %q:\n%s", want, text)
	}
	if !strings.Contains(out.String(), `class="act-keep"`) {
		t.Errorf("the kept resource is not marked act-keep:\n%s", out.String())
	}
}
