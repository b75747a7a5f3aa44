package spec

import (
	"reflect"
	"strings"
	"testing"
)

func TestZLocalsSubstitution(t *testing.T) {
	src := strings.Replace(header, "  components:", `  zlocals:
    - {name: mod, value: net}
    - {name: region, value: eu-west-1}
    - {name: repo, value: "git@github.com:o/r.git"}
  components:`, 1) + `    - name: net
      type: terraform
      module: {source: "./modules/${zlocals.mod}"}
      variablesFile: {source: "${zlocals.repo}", path: "${zlocals.region}/net.tfvars", ref: main}
      overlayData: [{name: init.sh, data: "echo ${zlocals.region}"}]
      variables:
        - {name: region, value: "${zlocals.region}"}
        - {name: azs, value: ["${zlocals.region}a", "${zlocals.region}b"]}
        - {name: tags, value: {where: "in ${zlocals.region}", n: 1}}
        - {name: literal, value: "${other.region} and $${zlocals.region}x"}
    - name: web
      type: helm
      chart: {path: ./charts/web, values: {region: "${zlocals.region}"}}
    - name: hook
      type: script
      script: {apply: "deploy --region ${zlocals.region}"}
`
	env, ds := parse(t, src)
	if ds.HasErrors() {
		t.Fatalf("unexpected errors:\n%s", ds)
	}
	net := env.Component("net")
	if net.Module.Source != "./modules/net" {
		t.Errorf("module.source = %q", net.Module.Source)
	}
	if net.VariablesFile.Source != "git@github.com:o/r.git" || net.VariablesFile.Path != "eu-west-1/net.tfvars" {
		t.Errorf("variablesFile = %+v", net.VariablesFile)
	}
	if net.OverlayData[0].Data != "echo eu-west-1" {
		t.Errorf("overlayData = %q", net.OverlayData[0].Data)
	}
	want := map[string]any{
		"region": "eu-west-1",
		"azs":    []any{"eu-west-1a", "eu-west-1b"},
		"tags":   map[string]any{"where": "in eu-west-1", "n": int64(1)},
		// Only ${zlocals.NAME} is knit's; anything else goes through untouched.
		"literal": "${other.region} and $eu-west-1x",
	}
	for _, v := range net.Variables {
		if !reflect.DeepEqual(v.Value, want[v.Name]) {
			t.Errorf("variable %s = %#v, want %#v", v.Name, v.Value, want[v.Name])
		}
	}
	if got := env.Component("web").Chart.Values["region"]; got != "eu-west-1" {
		t.Errorf("chart value = %v", got)
	}
	if got := env.Component("hook").Script.Apply; got != "deploy --region eu-west-1" {
		t.Errorf("script.apply = %q", got)
	}
}

func TestZLocalsErrors(t *testing.T) {
	src := strings.Replace(header, "  components:", `  zlocals:
    - {name: region, value: eu-west-1}
    - {name: region, value: us-east-1}
    - {value: orphan}
  components:`, 1) + `    - name: net
      type: terraform
      module: {source: ./modules/net}
      variables:
        - {name: region, value: "${zlocals.regoin}"}
        - {name: zone, value: ["${zlocals.zone}"]}
`
	_, ds := parse(t, src)
	wantDiags(t, ds, []string{
		`9:8 spec.zlocals[1].name: zlocal "region" is defined twice`,
		`10:7 spec.zlocals[2].name: missing required field`,
		`16:26 spec.components[0].variables[0].value: zlocal "regoin" is not defined`,
		`17:24 spec.components[0].variables[1].value[0]: zlocal "zone" is not defined`,
	})
	wantHint(t, ds, "define it under spec.zlocals")
}
