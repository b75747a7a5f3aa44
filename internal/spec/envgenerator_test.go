package spec

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"knit.dev/knit/internal/diag"
)

const appTemplate = `apiVersion: knit.dev/v1
kind: EnvironmentTemplate
metadata: {name: app}
spec:
  parameters:
    - {name: endpoint, type: string, required: true}
    - {name: region, type: string, default: none}
  components:
    - name: app
      type: terraform
      module: {source: ../modules/app}
      variables:
        - {name: label, value: "${param.endpoint}"}
        - {name: azs, value: "${param.region}"}
`

func envSet(envName, params, generators string) string {
	return `apiVersion: knit.dev/v1
kind: EnvironmentSet
metadata: {name: apps}
spec:
  teamName: shop
  envName: "` + envName + `"
  template: {path: ../templates/app.yaml}
  parameters: ` + params + `
  generators:
` + generators
}

const clusterSelector = `    - environments:
        selector:
          matchLabels: {role: cluster}
          matchExpressions:
            - {key: tier, operator: NotIn, values: [test]}
`

func loadEnvSet(t testing.TB, content string) (*Set, diag.Diagnostics) {
	t.Helper()
	dir := repo(t, map[string]string{"templates/app.yaml": appTemplate, "modules/app/main.tf": modApp, "envs/set.yaml": content})
	data, err := os.ReadFile(filepath.Join(dir, "envs/set.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	return ParseSet("envs/set.yaml", filepath.Join(dir, "envs"), dir, data, Options{})
}

func cluster(team, name string, labels map[string]string, endpoint string) LiveEnvironment {
	l := LiveEnvironment{Team: team, Name: name, Labels: labels}
	if endpoint != "" {
		l.Outputs = map[string]map[string]any{"cluster": {"endpoint": endpoint}}
	}
	return l
}

func fleet() []LiveEnvironment {
	return []LiveEnvironment{
		cluster("platform", "eu-1", map[string]string{"role": "cluster", "region": "eu"}, "https://eu-1"),
		cluster("platform", "test-1", map[string]string{"role": "cluster", "tier": "test"}, "https://test-1"),
		cluster("platform", "us-1", map[string]string{"role": "cluster", "region": "us", "tier": "prod"}, "https://us-1"),
		cluster("platform", "db-1", map[string]string{"role": "database"}, "https://db-1"),
		cluster("shop", "web", nil, ""),
	}
}

func TestEnvironmentsGeneratorYieldsAnElementPerMatchingLiveEnvironment(t *testing.T) {
	s, ds := loadEnvSet(t, envSet("app-{{ .env.name }}", `{endpoint: "{{ .env.outputs.cluster.endpoint }}", region: "{{ .env.labels.region }}"}`, clusterSelector))
	if ds.HasErrors() {
		t.Fatal(ds)
	}
	if _, ok := s.EnvironmentGenerator(); !ok {
		t.Fatal("EnvironmentGenerator: the set has one")
	}
	envs, ds := s.ExpandOver(SetInputs{Environments: fleet()})
	if ds.HasErrors() {
		t.Fatal(ds)
	}
	var got []string
	for _, e := range envs {
		v := e.Spec.Components[0].Variables[0]
		got = append(got, fmt.Sprintf("%s<-%s:%v:%v", e.ID(), e.Metadata.Annotations[AnnotationGeneratedFrom], v.Value, e.Spec.Components[0].Variables[1].Value))
	}
	want := "shop/app-eu-1<-platform/eu-1:https://eu-1:eu,shop/app-us-1<-platform/us-1:https://us-1:us"
	if strings.Join(got, ",") != want {
		t.Fatalf("environments\n got %s\nwant %s", strings.Join(got, ","), want)
	}
	// Without live environments the set generates nothing, and is valid.
	if envs, ds := s.Expand(nil); ds.HasErrors() || len(envs) != 0 {
		t.Fatalf("no live environment: %d environments, %v", len(envs), ds)
	}
}

func TestEnvironmentsGeneratorInAMatrix(t *testing.T) {
	s, ds := loadEnvSet(t, envSet("{{ .name }}-{{ .env.name }}", `{endpoint: "{{ .env.outputs.cluster.endpoint }}"}`, `    - matrix:
        generators:
          - list: {elements: [{name: blue}, {name: green}]}
          - environments: {selector: {matchExpressions: [{key: region, operator: In, values: [eu, us]}]}}
`))
	if ds.HasErrors() {
		t.Fatal(ds)
	}
	els, ds := s.ElementsOver(SetInputs{Environments: fleet()})
	if ds.HasErrors() {
		t.Fatal(ds)
	}
	var got []string
	for _, e := range els {
		got = append(got, e.Name+"<-"+e.Producer)
	}
	if want := "blue-eu-1<-platform/eu-1,blue-us-1<-platform/us-1,green-eu-1<-platform/eu-1,green-us-1<-platform/us-1"; strings.Join(got, ",") != want {
		t.Fatalf("elements %s, want %s", strings.Join(got, ","), want)
	}
}

func TestSelectorMatches(t *testing.T) {
	labels := map[string]string{"role": "cluster", "tier": "prod"}
	for _, c := range []struct {
		sel  Selector
		want bool
	}{
		{Selector{MatchLabels: map[string]string{"role": "cluster"}}, true},
		{Selector{MatchLabels: map[string]string{"role": "cluster", "tier": "dev"}}, false},
		{Selector{MatchLabels: map[string]string{"zone": ""}}, false}, // an absent key is not an empty value
		{Selector{MatchExpressions: []SelectorRequirement{{Key: "tier", Operator: OpIn, Values: []string{"dev", "prod"}}}}, true},
		{Selector{MatchExpressions: []SelectorRequirement{{Key: "zone", Operator: OpIn, Values: []string{"a"}}}}, false},
		{Selector{MatchExpressions: []SelectorRequirement{{Key: "tier", Operator: OpNotIn, Values: []string{"prod"}}}}, false},
		{Selector{MatchExpressions: []SelectorRequirement{{Key: "zone", Operator: OpNotIn, Values: []string{"a"}}}}, true},
		{Selector{MatchExpressions: []SelectorRequirement{{Key: "role", Operator: OpExists}}}, true},
		{Selector{MatchExpressions: []SelectorRequirement{{Key: "zone", Operator: OpExists}}}, false},
		{Selector{MatchExpressions: []SelectorRequirement{{Key: "role", Operator: "Equals"}}}, false},
	} {
		if got := c.sel.Matches(labels); got != c.want {
			t.Errorf("%s matches %v: %v, want %v", c.sel, labels, got, c.want)
		}
	}
}

func TestEnvironmentsGeneratorValidation(t *testing.T) {
	for _, c := range []struct{ name, gen, want string }{
		{"bad operator", `    - environments: {selector: {matchExpressions: [{key: role, operator: Equals, values: [a]}]}}`,
			`envs/set.yaml:10:64: spec.generators[0].environments.selector.matchExpressions[0].operator: unknown operator "Equals"`},
		{"lower-case operator", `    - environments: {selector: {matchExpressions: [{key: role, operator: in, values: [a]}]}}`,
			`unknown operator "in"`},
		{"empty selector", `    - environments: {selector: {}}`,
			`envs/set.yaml:10:32: spec.generators[0].environments.selector: an empty selector would select every environment`},
		{"empty labels", `    - environments: {selector: {matchLabels: {}}}`, `an empty selector would select every environment`},
		{"no selector", `    - environments: {}`,
			`spec.generators[0].environments.selector: an environments generator needs a selector`},
		{"not a mapping", `    - environments: [role]`, `spec.generators[0].environments: expected a mapping, found a list`},
		{"unknown field", `    - environments: {selector: {matchLabels: {role: c}}, teamz: [a]}`, `unknown field "teamz"`},
		{"selector typo", `    - environments: {selector: {matchLabel: {role: c}}}`, `unknown field "matchLabel"`},
		{"In without values", `    - environments: {selector: {matchExpressions: [{key: role, operator: In}]}}`, `operator In needs at least one value`},
		{"Exists with values", `    - environments: {selector: {matchExpressions: [{key: role, operator: Exists, values: [a]}]}}`, `operator Exists takes no values`},
		{"no key", `    - environments: {selector: {matchExpressions: [{operator: Exists}]}}`, `missing required field key`},
		{"bad key", `    - environments: {selector: {matchLabels: {"ro le": c}}}`, `"ro le" is not a label key`},
		{"bad value", `    - environments: {selector: {matchLabels: {role: "a b"}}}`, `"a b" is not a label value`},
		{"list value", `    - environments: {selector: {matchLabels: {role: [a]}}}`, `expected a label value, found a list`},
		{"two generators in one", `    - environments: {selector: {matchLabels: {role: c}}}
      list: {elements: [{name: a}]}`, `a generator is exactly one of list, gitBranches, environments or matrix (found 2)`},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, ds := loadEnvSet(t, envSet("app-{{ .env.name }}", `{endpoint: x}`, c.gen+"\n"))
			if !ds.HasErrors() || !strings.Contains(ds.String(), c.want) || (c.name == "bad operator" && len(ds) != 1) {
				t.Fatalf("diagnostics\n%s\nwant %s", ds, c.want)
			}
			for _, d := range ds.Errors() {
				if d.Pos.Line == 0 || d.Field == "" || (d.Hint == "" && !strings.Contains(d.Message, "unknown field")) {
					t.Errorf("%s: a diagnostic needs a line, a field and a fix: %+v", c.name, d)
				}
			}
		})
	}
}

func TestEnvironmentsGeneratorRefusesHostileAndCollidingNames(t *testing.T) {
	s, ds := loadEnvSet(t, envSet("app-{{ .env.labels.region }}", `{endpoint: x}`, `    - environments: {selector: {matchLabels: {role: cluster}}}
`))
	if ds.HasErrors() {
		t.Fatal(ds)
	}
	hostile := []LiveEnvironment{
		cluster("platform", "a", map[string]string{"role": "cluster", "region": "../../etc"}, ""),
		cluster("platform", "b", map[string]string{"role": "cluster", "region": "Eu_West"}, ""),
	}
	_, ds = s.ElementsOver(SetInputs{Environments: hostile})
	if !strings.Contains(ds.String(), "(made from platform/a)") || !strings.Contains(ds.String(), "(made from platform/b)") {
		t.Fatalf("a hostile label value in a name must be refused naming the producer:\n%s", ds)
	}
	colliding := []LiveEnvironment{
		cluster("platform", "a", map[string]string{"role": "cluster", "region": "eu"}, ""),
		cluster("payments", "a", map[string]string{"role": "cluster", "region": "eu"}, ""),
	}
	els, ds := s.ElementsOver(SetInputs{Environments: colliding})
	if want := `two elements generate the envName "app-eu" (made from platform/a and from payments/a)`; els != nil || !strings.Contains(ds.String(), want) {
		t.Fatalf("collision: elements %v, diagnostics\n%s\nwant %s", els, ds, want)
	}
	missing := []LiveEnvironment{cluster("platform", "a", map[string]string{"role": "cluster"}, "")}
	_, ds = s.ElementsOver(SetInputs{Environments: missing})
	if !strings.Contains(ds.String(), `map has no entry for key "region"`) {
		t.Fatalf("a label the producer lacks: %s", ds)
	}
}

func TestEnvironmentsGeneratorNamesWhatTheProducerExports(t *testing.T) {
	s, ds := loadEnvSet(t, envSet("app-{{ .env.name }}", `{endpoint: "{{ .env.outputs.cluster.kubeconfig }}"}`, `    - environments: {selector: {matchLabels: {role: cluster}}}
`))
	if ds.HasErrors() {
		t.Fatal(ds)
	}
	_, ds = s.ExpandOver(SetInputs{Environments: fleet()[:1]})
	want := `parameter endpoint cannot be made for element "app-eu-1": map has no entry for key "kubeconfig"`
	hint := `platform/eu-1 exports to team shop: cluster.endpoint`
	if !strings.Contains(ds.String(), want) || !strings.Contains(ds.String(), hint) {
		t.Fatalf("diagnostics\n%s\nwant %s and %s", ds, want, hint)
	}
}

func TestEnvironmentsGeneratorIsBounded(t *testing.T) {
	s, ds := loadEnvSet(t, envSet("app-{{ .env.name }}", `{endpoint: x}`, `    - environments: {selector: {matchLabels: {role: cluster}}}
`))
	if ds.HasErrors() {
		t.Fatal(ds)
	}
	var many []LiveEnvironment
	for i := range MaxSetElements + 500 {
		many = append(many, cluster("platform", fmt.Sprintf("c-%04d", i), map[string]string{"role": "cluster"}, ""))
	}
	if _, ds := s.ElementsOver(SetInputs{Environments: many}); !strings.Contains(ds.String(), "more than 1000 elements") {
		t.Fatalf("1,500 matching environments: %s", ds)
	}
	els, ds := s.ElementsOver(SetInputs{Environments: many[:MaxSetElements]})
	if ds.HasErrors() || len(els) != MaxSetElements {
		t.Fatalf("1,000 matching environments: %d elements, %s", len(els), ds)
	}
}

func TestGeneratedEnvironmentsCarryTheSetsLabelsAndExportsAndReadTheirProducer(t *testing.T) {
	set := strings.Replace(envSet("app-{{ .env.name }}", `{endpoint: x}`, clusterSelector),
		"  generators:", "  labels: {role: app, region: \"{{ .env.labels.region }}\"}\n  exports: [{output: app.id, teams: [ops]}]\n  generators:", 1)
	tmpl := strings.Replace(appTemplate, "      variables:", "      outputs: [{name: id}]\n      variables:", 1)
	dir := repo(t, map[string]string{"templates/app.yaml": tmpl, "modules/app/main.tf": modApp + `output "id" { value = "x" }` + "\n", "envs/set.yaml": set})
	data, err := os.ReadFile(filepath.Join(dir, "envs/set.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	s, ds := ParseSet("envs/set.yaml", filepath.Join(dir, "envs"), dir, data, Options{})
	if ds.HasErrors() {
		t.Fatal(ds)
	}
	envs, ds := s.ExpandOver(SetInputs{Environments: fleet()[:1]})
	if ds.HasErrors() {
		t.Fatal(ds)
	}
	e := envs[0]
	if got := fmt.Sprint(e.Metadata.Labels, e.Spec.Exports, e.Upstreams()); got != "map[region:eu role:app] [{app.id [ops]}] [platform/eu-1]" {
		t.Fatalf("labels, exports, upstreams: %s", got)
	}
	// A label made of a hostile value is refused with the producer named.
	_, ds = s.ExpandOver(SetInputs{Environments: []LiveEnvironment{cluster("platform", "x", map[string]string{"role": "cluster", "region": ""}, "")}})
	if !ds.HasErrors() {
		bad := []LiveEnvironment{{Team: "platform", Name: "y", Labels: map[string]string{"role": "cluster"}}}
		_, ds = s.ExpandOver(SetInputs{Environments: bad})
	}
	if !strings.Contains(ds.String(), "label region cannot be made for element") {
		t.Fatalf("a label the producer lacks: %s", ds)
	}
}
