package tgimport

import (
	"strings"
	"testing"

	"knit.dev/knit/internal/spec"
)

func TestName(t *testing.T) {
	for in, want := range map[string]string{
		"webserver-cluster":     "webserver-cluster",
		"My_App.v2":             "my-app-v2",
		"01-net":                "u-01-net",
		"--":                    "u",
		strings.Repeat("a", 70): strings.Repeat("a", 54) + "-" + shortHash(strings.Repeat("a", 70)),
	} {
		if got := name(in); got != want {
			t.Errorf("name(%q) = %q, want %q", in, got, want)
		}
	}
}

func intp(i int) *int { return &i }

// desc is a tree of two environments: in qa a vpc and an app reading its
// outputs; in prod an app reading qa's vpc (which knit cannot carry).
func desc() *Description {
	return &Description{Format: formatV1, Root: "/live", Units: []Unit{
		{Path: "qa/vpc", File: "qa/vpc/terragrunt.hcl", Source: "git::https://example.com/m.git//vpc?ref=v1.2.0", Inputs: map[string]any{"cidr": "10.0.0.0/16"}},
		{Path: "qa/app", File: "qa/app/terragrunt.hcl", Source: "../../modules//app",
			Inputs:         map[string]any{"replicas": 2.0},
			Refs:           map[string]OutputRef{"vpc_id": {Dependency: "vpc", Output: "id"}, "subnet": {Dependency: "vpc", Output: "subnets", Index: intp(1)}},
			Dependencies:   []Dependency{{Name: "vpc", Unit: "qa/vpc", Pos: "qa/app/terragrunt.hcl:3", Enabled: true, MockOutputs: map[string]any{"id": "mock"}}},
			PreventDestroy: true},
		{Path: "prod/app", File: "prod/app/terragrunt.hcl", Source: "tfr:///terraform-aws-modules/vpc/aws?version=5.1.0",
			Refs:         map[string]OutputRef{"vpc_id": {Dependency: "vpc", Output: "id"}},
			Dependencies: []Dependency{{Name: "vpc", Unit: "qa/vpc", Pos: "prod/app/terragrunt.hcl:3", Enabled: true}}},
		{Path: "prod/broken", File: "prod/broken/terragrunt.hcl", Error: "boom"},
	}}
}

func TestTranslate(t *testing.T) {
	res, err := Translate(desc(), Options{Dir: "/live"})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Environments) != 2 || res.Environments[0].Env.Spec.EnvName != "prod" || res.Environments[1].Env.Spec.EnvName != "qa" {
		t.Fatalf("environments: %+v", res.Environments)
	}
	qa := res.Environments[1].Env
	if qa.Spec.TeamName != "live" {
		t.Errorf("team %q, want the root's name", qa.Spec.TeamName)
	}
	app, vpc := qa.Component("app"), qa.Component("vpc")
	if app.Module.Source != "./modules" || app.Module.Path != "app" || !app.DestroyProtection {
		t.Errorf("app module %+v, destroyProtection %v", app.Module, app.DestroyProtection)
	}
	want := map[string]spec.Variable{"replicas": {Name: "replicas", Value: 2.0}, "vpc_id": {Name: "vpc_id", ValueFrom: "vpc.id"}, "subnet": {Name: "subnet", ValueFrom: "vpc.subnets[1]"}}
	for _, v := range app.Variables {
		if w := want[v.Name]; w.Name == "" || w.ValueFrom != v.ValueFrom || w.Value != v.Value {
			t.Errorf("variable %+v, want %+v", v, w)
		}
	}
	if len(app.DependsOn) != 0 {
		t.Errorf("dependsOn %v: valueFrom already orders app after vpc", app.DependsOn)
	}
	if vpc.Output("id") == nil || vpc.Output("subnets") == nil || vpc.Module.Source != "git::https://example.com/m.git//vpc?ref=v1.2.0" {
		t.Errorf("vpc: outputs %+v, module %+v", vpc.Outputs, vpc.Module)
	}
	prod := res.Environments[0].Env.Component("app")
	if prod.Module.Source != "terraform-aws-modules/vpc/aws" || prod.Module.Version != "5.1.0" || len(prod.Variables) != 0 {
		t.Errorf("prod app: module %+v, variables %+v", prod.Module, prod.Variables)
	}
	var report strings.Builder
	PrintReport(&report, res, "")
	for _, s := range []string{
		`qa/app/terragrunt.hcl:3: dependency vpc mock_outputs: not copied: {"id":"mock"}`,
		"prod/app/terragrunt.hcl:3: inputs.vpc_id: left out: dependency.vpc.outputs.id reads unit qa/vpc of environment qa",
		"prod/broken/terragrunt.hcl: unit: not imported: Terragrunt could not evaluate it: boom",
	} {
		if !strings.Contains(report.String(), s) {
			t.Errorf("report lacks %q:\n%s", s, report.String())
		}
	}
}

func TestTranslateEnvLevel(t *testing.T) {
	d := &Description{Format: formatV1, Root: "/r", Units: []Unit{
		{Path: "a/us/qa/db"}, {Path: "b/us/qa/db"}, {Path: "a/us/qa/net/vpc"}, {Path: "top"},
	}}
	res, _ := Translate(d, Options{Dir: "/r", EnvLevel: 3})
	var names []string
	for _, im := range res.Environments {
		names = append(names, im.Env.Spec.EnvName+":"+im.Folder)
		for _, c := range im.Env.Spec.Components {
			names = append(names, c.Name)
		}
	}
	if got := strings.Join(names, " "); got != "a-us-qa:a/us/qa db net-vpc b-us-qa:b/us/qa db" {
		t.Errorf("environments and components: %s", got)
	}
	if len(res.Findings) != 1 || !strings.Contains(res.Findings[0].Why, "not below an environment folder 3 levels down") {
		t.Errorf("findings: %+v", res.Findings)
	}
}

func TestDecodeRefusesAnotherFormat(t *testing.T) {
	if _, err := Decode([]byte(`{"format":"knit-terragrunt/v9"}`)); err == nil || !strings.Contains(err.Error(), "make build") {
		t.Errorf("err = %v", err)
	}
}

// Without knit-terragrunt beside knit or on PATH, the error says where it
// comes from.
func TestLocateMissing(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	if _, err := Locate(); err == nil || !strings.Contains(err.Error(), "knit-terragrunt is neither beside knit nor on PATH") || !strings.Contains(err.Error(), "make build") {
		t.Errorf("err = %v", err)
	}
}

// dependency.b.inputs.x is b's evaluated input, copied.
func TestTranslateDependencyInputs(t *testing.T) {
	d := &Description{Format: formatV1, Root: "/r", Units: []Unit{
		{Path: "e/a", InputRefs: map[string]InputRef{"bar": {Dependency: "b", Input: "bar"}, "nope": {Dependency: "b", Input: "nope"}},
			Dependencies: []Dependency{{Name: "b", Unit: "e/b", Enabled: true}}},
		{Path: "e/b", Inputs: map[string]any{"bar": "parent-bar"}},
	}}
	res, _ := Translate(d, Options{Dir: "/r"})
	a := res.Environments[0].Env.Component("a")
	if len(a.Variables) != 1 || a.Variables[0].Value != "parent-bar" || a.DependsOn[0] != "b" {
		t.Errorf("a: variables %+v, dependsOn %v", a.Variables, a.DependsOn)
	}
	if len(res.Findings) != 1 || !strings.Contains(res.Findings[0].Why, "dependency.b.inputs.nope: unit e/b has no such input") {
		t.Errorf("findings %+v", res.Findings)
	}
}
