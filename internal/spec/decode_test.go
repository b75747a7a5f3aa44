package spec

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"
)

func TestYAMLSyntaxErrorLine(t *testing.T) {
	tests := []struct {
		name string
		src  string
		want string // "line:col field: message" of the only diagnostic
	}{
		{
			"value indented under a sibling",
			"apiVersion: knit.dev/v1\nkind: Environment\nspec:\n  teamName: shop\n   envName: dev\n",
			"5:0 : invalid YAML: mapping values are not allowed in this context",
		},
		{
			// yaml.v3 says "line 4" here, where the enclosing mapping starts, counted from 0.
			"flow list followed by text (CloudKnit's team template)",
			"apiVersion: knit.dev/v1\nkind: Environment\nmetadata:\n  name: [[team]]\n  namespace: [[company]]-config\nspec: {}\n",
			"5:0 : invalid YAML: did not find expected key",
		},
		{
			"tab indentation",
			"apiVersion: knit.dev/v1\nkind: Environment\nspec:\n  teamName: shop\n\tenvName: dev\n",
			"5:0 : invalid YAML: found a tab character that violates indentation",
		},
		{
			"unclosed flow list",
			"apiVersion: knit.dev/v1\nkind: Environment\nspec:\n  components:\n    - name: a\n      dependsOn: [b, c\n    - name: b\n",
			// The parser notices at line 7; the list left open is on line 6.
			"6:0 : invalid YAML: did not find expected ',' or ']'",
		},
		{
			"undefined alias",
			"apiVersion: knit.dev/v1\nkind: Environment\nspec:\n  teamName: *team\n",
			`4:0 : invalid YAML: unknown anchor 'team' referenced`,
		},
		{
			"empty file",
			"# nothing but a comment\n",
			"0:0 : invalid YAML: the file is empty",
		},
		{
			"broken second document",
			header + "    - {name: a, type: script, script: {apply: 'true'}}\n---\nkey: [unclosed\n",
			"10:0 : invalid YAML: did not find expected ',' or ']'",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, ds := parse(t, tt.src)
			wantDiags(t, ds, []string{tt.want})
			if !strings.HasPrefix(ds[0].String(), "env.yaml:") || ds[0].Hint == "" {
				t.Errorf("diagnostic %q: want env.yaml:LINE and a hint", ds[0])
			}
		})
	}
}

func TestParseNeverNilWithoutError(t *testing.T) {
	for _, src := range []string{"", "~", "null", "42", "- a\n- b\n", "---\n---\n", "[]", "{}"} {
		env, ds := parse(t, src)
		if env == nil && !ds.HasErrors() {
			t.Errorf("Parse(%q) = nil environment and no error", src)
		}
		if !ds.HasErrors() {
			t.Errorf("Parse(%q): no error for a file that is not an environment", src)
		}
	}
	_, ds := parse(t, "- a\n- b\n")
	wantDiags(t, ds, []string{"1:1 : expected a mapping, found a list"})
}

func TestDecodeStructure(t *testing.T) {
	tests := []struct {
		name string
		src  string
		want []string
		hint string
	}{
		{
			"unknown component field with did-you-mean",
			header + `    - name: app
      type: terraform
      module: {source: ./modules/app}
      dependOn: [net]
`,
			[]string{`11:7 spec.components[0].dependOn: unknown field "dependOn"`},
			`did you mean "dependsOn"?`,
		},
		{
			"unknown top-level field",
			strings.Replace(header, "spec:", "specs:", 1) + "    - {name: a}\n",
			[]string{
				`1:1 spec: missing required field`,
				`4:1 specs: unknown field "specs"`,
			},
			`did you mean "spec"?`,
		},
		{
			"unknown module field",
			header + "    - {name: a, type: terraform, module: {sorce: ./modules/net}}\n",
			[]string{
				`8:34 spec.components[0].module.source: missing required field`,
				`8:43 spec.components[0].module.sorce: unknown field "sorce"`,
			},
			`did you mean "source"?`,
		},
		{
			"component source (CloudKnit README) explains where a source goes",
			header + "    - {name: a, type: terraform, module: {source: ./modules/net}, source: {repo: x}}\n",
			[]string{`8:67 spec.components[0].source: unknown field "source"`},
			"module: {source: ...}",
		},
		{
			"metadata takes any field",
			strings.Replace(header, "metadata: {name: shop-dev}", "metadata: {name: shop-dev, uid: x, creationTimestamp: y}", 1) +
				"    - {name: a, type: terraform, module: {source: ./modules/net}}\n",
			nil, "",
		},
		{
			"status from a cluster export is ignored",
			header + "    - {name: a, type: terraform, module: {source: ./modules/net}}\nstatus: {phase: Ready}\n",
			nil, "",
		},
		{
			"field set twice",
			header + "    - name: a\n      name: b\n      type: terraform\n      module: {source: ./modules/net}\n",
			[]string{`9:7 spec.components[0].name: "name" is set twice`},
			"remove one",
		},
		{
			"components is not a list",
			header + "    name: a\n",
			[]string{`8:5 spec.components: expected a list, found a mapping`},
			"",
		},
		{
			"spec is not a mapping",
			"apiVersion: knit.dev/v1\nkind: Environment\nspec: [a]\n",
			[]string{`3:7 spec: expected a mapping, found a list`},
			"",
		},
		{
			"dependsOn is a single value",
			header + "    - {name: a, type: script, script: {apply: x}}\n    - {name: b, type: script, script: {apply: x}, dependsOn: a}\n",
			[]string{`9:62 spec.components[1].dependsOn: expected a list, found "a"`},
			"",
		},
		{
			"name is a list",
			header + "    - {name: [a], type: script, script: {apply: x}}\n",
			[]string{
				// and not also "missing required field"
				`8:14 spec.components[0].name: expected a single value, found a list`,
			},
			"",
		},
		{
			"boolean written as yes",
			header + "    - {name: a, type: script, script: {apply: x}, autoApprove: yes}\n",
			[]string{`8:64 spec.components[0].autoApprove: expected true or false, found "yes"`},
			"write true or false",
		},
		{
			"module as a string",
			header + "    - {name: a, type: terraform, module: ./modules/net}\n",
			[]string{
				`8:42 spec.components[0].module: expected a mapping, found "./modules/net"`,
			},
			"",
		},
		{
			"outputs as bare names",
			header + "    - {name: a, type: script, script: {apply: x}, outputs: [url]}\n",
			[]string{
				`8:61 spec.components[0].outputs[0]: expected a mapping, found "url"`,
			},
			"",
		},
		{
			"second document",
			header + "    - {name: a, type: script, script: {apply: x}}\n---\napiVersion: knit.dev/v1\n",
			[]string{`10:1 : a second YAML document: an environment file holds exactly one`},
			"its own file",
		},
		{
			"another kind is not checked as an environment",
			"apiVersion: v1\nkind: Namespace\nmetadata: {name: x}\n",
			[]string{
				`1:1 apiVersion: unsupported apiVersion "v1"`,
				`2:1 kind: unsupported kind "Namespace"`,
			},
			"knit reads kind: Environment, EnvironmentTemplate, EnvironmentSet and Pipeline files",
		},
		{
			"a typo'd kind is told the kind it is closest to",
			"apiVersion: knit.dev/v1\nkind: Pipline\nmetadata: {name: x}\n",
			[]string{`2:1 kind: unsupported kind "Pipline"`},
			`did you mean "Pipeline"? knit reads kind: Environment, EnvironmentTemplate, EnvironmentSet and Pipeline files`,
		},
		{
			"a pipeline where an environment is expected: what it is, not its fields",
			"apiVersion: knit.dev/v1\nkind: Pipeline\nmetadata: {name: x}\nspec:\n  stages: [{name: dev, file: dev.yaml}]\n",
			[]string{`2:1 kind: this is a Pipeline, not an Environment`},
			"knit validate -f PIPELINE checks it with its stages",
		},
		{
			"a set where an environment is expected",
			"apiVersion: knit.dev/v1\nkind: EnvironmentSet\nmetadata: {name: x}\n",
			[]string{`2:1 kind: this is an EnvironmentSet, not an Environment`},
			"knit render -f SET prints them",
		},
		{
			"missing apiVersion and kind",
			"spec:\n  teamName: shop\n  envName: dev\n  components:\n    - {name: a, type: script, script: {apply: x}}\n",
			[]string{`1:1 apiVersion: missing required field`, `1:1 kind: missing required field`},
			"add kind: Environment",
		},
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

func TestVariableValuesStayTyped(t *testing.T) {
	env := mustParse(t, header+`    - name: a
      type: script
      script: {apply: x}
      variables:
        - {name: count, value: 3}
        - {name: hex, value: 0x1F}
        - {name: ratio, value: 0.5}
        - {name: on, value: true}
        - {name: text, value: "3"}
        - {name: empty, value: null}
        - {name: list, value: [1, "two", false]}
        - {name: map, value: {a: 1, b: [x], c: {d: 2.5}}}
        - {name: huge, value: 123456789012345678901234567890}
        - {name: negative-huge, value: -99999999999999999999}
        - {name: infinite, value: .inf}
        - {name: date, value: 2024-01-02}
`)
	want := map[string]any{
		"count": int64(3),
		"hex":   int64(31),
		"ratio": 0.5,
		"on":    true,
		"text":  "3",
		"empty": nil,
		"list":  []any{int64(1), "two", false},
		"map":   map[string]any{"a": int64(1), "b": []any{"x"}, "c": map[string]any{"d": 2.5}},
		// Beyond int64: kept digit for digit, not rounded through float64.
		"huge":          json.Number("123456789012345678901234567890"),
		"negative-huge": json.Number("-99999999999999999999"),
		// JSON has no infinity; the text goes through as written.
		"infinite": ".inf",
		"date":     "2024-01-02",
	}
	got := map[string]any{}
	for _, v := range env.Component("a").Variables {
		got[v.Name] = v.Value
	}
	for name, w := range want {
		if !reflect.DeepEqual(got[name], w) {
			t.Errorf("variable %s = %#v (%T), want %#v (%T)", name, got[name], got[name], w, w)
		}
	}
	if _, err := json.Marshal(got); err != nil {
		t.Errorf("values do not encode as JSON (they become tfvars): %v", err)
	}
}

func TestChartValuesStayTyped(t *testing.T) {
	env := mustParse(t, header+"    - {name: web, type: helm, chart: {path: ./charts/web, values: {replicas: 2, image: {tag: v1}}}}\n")
	want := map[string]any{"replicas": int64(2), "image": map[string]any{"tag": "v1"}}
	if got := env.Component("web").Chart.Values; !reflect.DeepEqual(got, want) {
		t.Errorf("chart values = %#v, want %#v", got, want)
	}
	_, ds := parse(t, header+"    - {name: web, type: helm, chart: {path: ./charts/web, values: [1]}}\n")
	wantDiags(t, ds, []string{
		`8:67 spec.components[0].chart.values: expected a mapping of chart values, found a list`,
	})
}

func TestMergeKeys(t *testing.T) {
	env := mustParse(t, header+`    - &base
      name: net
      type: terraform
      module: {source: ./modules/net}
      variables:
        - name: tags
          value:
            <<: {team: shop, tier: base}
            tier: web
      outputs: [{name: id}]
    - <<: *base
      name: app
      module: {source: ./modules/app}
      dependsOn: [net]
`)
	app := env.Component("app")
	if app == nil || app.Type != TypeTerraform || app.Module.Source != "./modules/app" || len(app.Outputs) != 1 {
		t.Fatalf("merged component = %+v, want type and outputs from base, its own name and module", app)
	}
	if got, want := env.Component("net").Variables[0].Value, map[string]any{"team": "shop", "tier": "web"}; !reflect.DeepEqual(got, want) {
		t.Errorf("merged value = %v, want %v (written keys win)", got, want)
	}

	_, ds := parse(t, header+"    - {name: a, type: script, script: {apply: x}, <<: [1]}\n")
	wantDiags(t, ds, []string{`8:56 spec.components[0]: a merge key (<<) can merge only mappings, found "1"`})
	_, ds = parse(t, header+"    - {name: a, type: script, script: {apply: x}, <<: {typo: 1}}\n")
	wantDiags(t, ds, []string{`8:56 spec.components[0].typo: unknown field "typo"`})
}

func TestAliasBombsAreCheap(t *testing.T) {
	bomb := header + `    - name: a
      type: script
      script: {apply: x}
      variables:
        - name: lol
          value:
            l0: &l0 [x, x, x, x, x, x, x, x, x, x]
            l1: &l1 [*l0, *l0, *l0, *l0, *l0, *l0, *l0, *l0, *l0, *l0]
            l2: &l2 [*l1, *l1, *l1, *l1, *l1, *l1, *l1, *l1, *l1, *l1]
            l3: &l3 [*l2, *l2, *l2, *l2, *l2, *l2, *l2, *l2, *l2, *l2]
            l4: &l4 [*l3, *l3, *l3, *l3, *l3, *l3, *l3, *l3, *l3, *l3]
            l5: &l5 [*l4, *l4, *l4, *l4, *l4, *l4, *l4, *l4, *l4, *l4]
            l6: &l6 [*l5, *l5, *l5, *l5, *l5, *l5, *l5, *l5, *l5, *l5]
            l7: &l7 [*l6, *l6, *l6, *l6, *l6, *l6, *l6, *l6, *l6, *l6]
            l8: &l8 [*l7, *l7, *l7, *l7, *l7, *l7, *l7, *l7, *l7, *l7]
`
	selfRef := header + `    - name: a
      type: script
      script: {apply: x}
      variables:
        - name: loop
          value: &v [*v, *v]
`
	mergeLoop := header + "    - &c {name: a, type: script, script: {apply: x}, <<: *c}\n"
	// Every reference to a mapping of unknown fields would report each field again.
	var keys, refs strings.Builder
	for i := range 2000 {
		fmt.Fprintf(&keys, "k%d: 1, ", i)
		refs.WriteString("*m, ")
	}
	unknownFields := header + "    - &m {" + keys.String() + "}\n" + "    - {<<: [" + refs.String() + "]}\n" +
		strings.Repeat("    - *m\n", 2000)
	for name, src := range map[string]string{"billion laughs": bomb, "self reference": selfRef, "merge loop": mergeLoop, "unknown fields": unknownFields} {
		t.Run(name, func(t *testing.T) {
			// An unbounded walk would not return at all (the test times out);
			// the bounded diagnostics below show the budget stopped it.
			_, ds := parse(t, src)
			if !ds.HasErrors() {
				t.Fatalf("no error for an alias bomb")
			}
			// Each written field is reported; expansions stop at the budget.
			if n, limit := len(ds), 2000+aliasAllowance/10; n > limit && name == "unknown fields" || n > 5 && name != "unknown fields" {
				t.Errorf("%d diagnostics:\n%s", n, ds[:5])
			}
		})
	}
	_, ds := parse(t, bomb)
	wantHint(t, ds, "use fewer aliases")
}

func TestSharedAnchorsAreFine(t *testing.T) {
	env := mustParse(t, header+`    - name: a
      type: script
      script: {apply: x}
      variables:
        - {name: tags, value: &tags {team: shop, cost-centre: "42"}}
    - name: b
      type: script
      script: {apply: x}
      variables:
        - {name: tags, value: *tags}
`)
	if got := env.Component("b").Variables[0].Value; !reflect.DeepEqual(got, map[string]any{"team": "shop", "cost-centre": "42"}) {
		t.Errorf("aliased value = %v", got)
	}
}

func TestDeepNesting(t *testing.T) {
	value := strings.Repeat("[", 100) + strings.Repeat("]", 100)
	_, ds := parse(t, header+"    - {name: a, type: script, script: {apply: x}, variables: [{name: deep, value: "+value+"}]}\n")
	if !ds.HasErrors() || !strings.Contains(ds.String(), "value nested too deeply") {
		t.Errorf("want a nesting error, got:\n%s", ds)
	}
	if len(ds) != 1 {
		t.Errorf("want one diagnostic, got %d", len(ds))
	}
}

func TestMetadata(t *testing.T) {
	env := mustParse(t, strings.Replace(header, "metadata: {name: shop-dev}", `metadata:
  name: shop-dev
  namespace: zmart-config
  labels: {team: shop, tier: "1"}
  annotations: {note: hello}
  uid: 1234`, 1)+"    - {name: a, type: script, script: {apply: x}}\n")
	want := Metadata{Name: "shop-dev", Namespace: "zmart-config",
		Labels: map[string]string{"team": "shop", "tier": "1"}, Annotations: map[string]string{"note": "hello"}}
	if !reflect.DeepEqual(env.Metadata, want) {
		t.Errorf("metadata = %+v, want %+v", env.Metadata, want)
	}
	if env.ID() != "shop/dev" {
		t.Errorf("ID = %q", env.ID())
	}
}

func TestLongValuesAreShortened(t *testing.T) {
	long := strings.Repeat("x", 5000)
	key := long[:1000] // YAML keys may be at most 1024 characters
	_, ds := parse(t, header+"    - name: "+long+"\n      type: script\n      script: {apply: x}\n      autoApprove: "+long+"\n      "+key+": 1\n")
	if len(ds) != 3 {
		t.Fatalf("want 3 diagnostics (name, autoApprove, unknown field), got:\n%s", ds)
	}
	for _, d := range ds {
		if len(d.Message) > 200 || !strings.Contains(d.Message, `xxx"…`) {
			t.Errorf("message not shortened (%d bytes): %.120s", len(d.Message), d.Message)
		}
	}
	if got := quote("ééééééééééééééééééééééééééééééééééééééééé"); !strings.HasSuffix(got, `"…`) || strings.ContainsRune(got, '\uFFFD') || strings.Contains(got, `\x`) {
		t.Errorf("quote cut a character in half: %s", got)
	}
}

func TestChartTestAndMaxHistory(t *testing.T) {
	env := mustParse(t, header+"    - {name: web, type: helm, chart: {path: ./charts/web, test: true, maxHistory: 3}}\n")
	if ch := env.Component("web").Chart; !ch.Test || ch.MaxHistory != 3 {
		t.Errorf("chart = %+v, want test and maxHistory 3", ch)
	}
	_, ds := parse(t, header+"    - {name: web, type: helm, chart: {path: ./charts/web, test: sure, maxHistory: many}}\n")
	wantDiags(t, ds, []string{
		`8:65 spec.components[0].chart.test: expected true or false, found "sure"`,
		`8:83 spec.components[0].chart.maxHistory: expected a whole number, found "many"`,
	})
	_, ds = parse(t, header+"    - {name: web, type: helm, chart: {path: ./charts/web, maxHistory: -1}}\n")
	wantDiags(t, ds, []string{
		`8:59 spec.components[0].chart.maxHistory: maxHistory -1 is negative`,
	})
}
