package spec

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
)

// consumer reads platform/eu-1's cluster.endpoint in a variable, a
// kubeconfig and a health check.
const consumer = header + `    - name: app
      type: script
      script: {apply: x}
      variables:
        - {name: endpoint, valueFrom: {environment: platform/eu-1, output: cluster.endpoint}}
        - {name: first, valueFrom: {environment: platform/eu-2, output: "cluster.zones[0]"}}
      outputs: [{name: url}]
      health:
        - name: up
          http: {url: {valueFrom: {environment: platform/eu-1, output: cluster.health_url}}}
    - name: web
      type: helm
      chart: {path: ./charts/web}
      kubeconfig: {valueFrom: {environment: platform/eu-1, output: cluster.kubeconfig}}
`

func TestEnvValueFromParse(t *testing.T) {
	env := mustParse(t, consumer)
	v := env.Component("app").Variables[0].ValueFrom
	ref, ok := v.EnvOutput()
	if !ok || ref.Environment() != "platform/eu-1" || ref.Output.String() != "cluster.endpoint" {
		t.Fatalf("EnvOutput(%q) = %+v, %v", v, ref, ok)
	}
	if got := env.Upstreams(); !slices.Equal(got, []string{"platform/eu-1", "platform/eu-2"}) {
		t.Errorf("Upstreams = %v", got)
	}
	var outs []string
	for _, r := range env.EnvOutputRefs() {
		outs = append(outs, r.String())
	}
	want := []string{"platform/eu-1 cluster.endpoint", "platform/eu-2 cluster.zones[0]", "platform/eu-1 cluster.health_url", "platform/eu-1 cluster.kubeconfig"}
	if !slices.Equal(outs, want) {
		t.Errorf("EnvOutputRefs = %v, want %v", outs, want)
	}
	// No edge inside the environment: the producer is elsewhere.
	if deps := env.Component("app").DependsOn; len(deps) != 0 {
		t.Errorf("app depends on %v", deps)
	}
}

// A revision is stored as JSON: the object form survives it, and the
// string form stays a string.
func TestEnvValueFromJSON(t *testing.T) {
	env := mustParse(t, consumer)
	b, err := json.Marshal(env)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), `"valueFrom":{"environment":"platform/eu-1","output":"cluster.endpoint"}`) {
		t.Errorf("JSON lacks the object form: %s", b)
	}
	back, err := FromJSON(b, "env.yaml", "")
	if err != nil {
		t.Fatal(err)
	}
	if got := back.Component("app").Variables[0].ValueFrom; got != env.Component("app").Variables[0].ValueFrom {
		t.Errorf("after JSON: %q", got)
	}
	var v Variable
	if err := json.Unmarshal([]byte(`{"name":"x","valueFrom":"net.id"}`), &v); err != nil || v.ValueFrom != "net.id" {
		t.Errorf("string form: %q, %v", v.ValueFrom, err)
	}
}

func TestExportsParse(t *testing.T) {
	env := mustParse(t, header+app+"  exports:\n    - {output: app.url, teams: [shop, web]}\n")
	if !env.Spec.ExportsTo("app.url", "web") || env.Spec.ExportsTo("app.url", "ops") || env.Spec.ExportsTo("app.other", "shop") {
		t.Errorf("ExportsTo wrong for %+v", env.Spec.Exports)
	}
}

// Every mistake in an environment valueFrom or an export is reported at
// its line and column, with the field and a fix.
func TestExportsValidate(t *testing.T) {
	vf := func(s string) string {
		return header + "    - name: app\n      type: script\n      script: {apply: x}\n      variables:\n        - {name: a, valueFrom: " + s + "}\n"
	}
	tests := []struct {
		name string
		src  string
		want []string
		hint string
	}{
		{"a metadata name is not a producer", vf("{environment: platform-eu-1, output: cluster.endpoint}"),
			[]string{`12:33 spec.components[0].variables[0].valueFrom.environment: "platform-eu-1" is not of the form TEAM/ENV`}, "teamName and envName"},
		{"three parts", vf("{environment: a/b/c, output: cluster.endpoint}"),
			[]string{`12:33 spec.components[0].variables[0].valueFrom.environment: "a/b/c" is not of the form TEAM/ENV`}, ""},
		{"itself", vf("{environment: shop/dev, output: cluster.endpoint}"),
			[]string{`12:33 spec.components[0].variables[0].valueFrom.environment: shop/dev is this environment`}, "valueFrom: COMPONENT.OUTPUT"},
		{"bad output", vf("{environment: platform/eu-1, output: endpoint}"),
			[]string{`12:61 spec.components[0].variables[0].valueFrom.output: "endpoint" is not of the form COMPONENT.OUTPUT or COMPONENT.OUTPUT[N]`}, ""},
		{"missing output", vf("{environment: platform/eu-1}"),
			[]string{`12:32 spec.components[0].variables[0].valueFrom.output: missing required field`}, "COMPONENT.OUTPUT"},
		{"unknown field", vf("{environment: platform/eu-1, output: c.o, team: x}"),
			[]string{`12:74 spec.components[0].variables[0].valueFrom.team: unknown field "team"`}, ""},
		{"string form of another environment", vf(`"platform/eu-1:cluster.endpoint"`),
			[]string{`12:32 spec.components[0].variables[0].valueFrom: "platform/eu-1:cluster.endpoint" is not of the form component.output`}, "{environment: TEAM/ENV"},
		{"cloudknit", strings.Replace(vf("{environment: platform/eu-1, output: c.o}"), APIVersionKnit, APIVersionCloudKnit, 1),
			[]string{`9:7 spec.components[0].type: unsupported component type "script"`, `12:21 spec.components[0].variables[0].valueFrom: valueFrom {environment, output} needs apiVersion: knit.dev/v1`}, ""},
		{"export of an undeclared output", header + app + "  exports:\n    - {output: app.nope, teams: [shop]}\n",
			[]string{`13:8 spec.exports[0].output: component "app" does not declare output "nope"`}, "add {name: nope}"},
		{"export of an index", header + app + "  exports:\n    - {output: \"app.url[0]\", teams: [shop]}\n",
			[]string{`13:8 spec.exports[0].output: "app.url[0]" is not of the form COMPONENT.OUTPUT`}, "whole output"},
		{"export to nobody", header + app + "  exports:\n    - {output: app.url}\n",
			[]string{`13:7 spec.exports[0].teams: missing required field`}, "teams: [shop]"},
		{"export to a bad team", header + app + "  exports:\n    - {output: app.url, teams: [Shop, web, web]}\n",
			[]string{`13:33 spec.exports[0].teams[0]: "Shop" is not a valid name`, `13:44 spec.exports[0].teams[2]: team "web" is listed twice`}, ""},
		{"exported twice", header + app + "  exports:\n    - {output: app.url, teams: [a]}\n    - {output: app.url, teams: [b]}\n",
			[]string{`14:8 spec.exports[1].output: app.url is exported twice`}, "one entry"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, ds := parse(t, tt.src)
			wantDiags(t, ds, tt.want)
			if tt.hint != "" {
				wantHint(t, ds, tt.hint)
			}
		})
	}
}
