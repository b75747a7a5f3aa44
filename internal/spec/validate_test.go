package spec

import (
	"reflect"
	"strings"
	"testing"
)

// Each case is one mistake (or one thing that must stay allowed): deleting
// the rule that catches it makes its case fail.
func TestValidate(t *testing.T) {
	tests := []struct {
		name string
		src  string
		want []string // every diagnostic, "line:col field: message"
		hint string   // some diagnostic's hint contains this
	}{
		// Names.
		{
			"team name in upper case",
			strings.Replace(header, "teamName: shop", "teamName: Shop", 1) + "    - {name: a, type: script, script: {apply: x}}\n",
			[]string{`5:3 spec.teamName: "Shop" is not a valid name`},
			"RFC 1035",
		},
		{
			"env name too long",
			strings.Replace(header, "envName: dev", "envName: "+strings.Repeat("d", 64), 1) + "    - {name: a, type: script, script: {apply: x}}\n",
			[]string{`6:3 spec.envName: "` + strings.Repeat("d", 64) + `" is 64 characters long; the limit is 63`},
			"",
		},
		{
			"63 characters is fine",
			header + "    - {name: " + strings.Repeat("a", 63) + ", type: script, script: {apply: x}}\n",
			nil, "",
		},
		{
			"missing team and env names",
			"apiVersion: knit.dev/v1\nkind: Environment\nspec:\n  components:\n    - {name: a, type: script, script: {apply: x}}\n",
			[]string{`3:1 spec.envName: missing required field`, `3:1 spec.teamName: missing required field`},
			"",
		},
		{
			"no components",
			"apiVersion: knit.dev/v1\nkind: Environment\nspec:\n  teamName: shop\n  envName: dev\n",
			[]string{`3:1 spec.components: an environment needs at least one component`},
			"",
		},
		{
			"bad component names",
			header + `    - {name: Net, type: script, script: {apply: x}}
    - {name: 1net, type: script, script: {apply: x}}
    - {name: my_net, type: script, script: {apply: x}}
    - {name: net-, type: script, script: {apply: x}}
    - {name: ` + strings.Repeat("n", 64) + `, type: script, script: {apply: x}}
    - {type: script, script: {apply: x}}
`,
			[]string{
				`8:8 spec.components[0].name: "Net" is not a valid name`,
				`9:8 spec.components[1].name: "1net" is not a valid name`,
				`10:8 spec.components[2].name: "my_net" is not a valid name`,
				`11:8 spec.components[3].name: "net-" is not a valid name`,
				`12:8 spec.components[4].name: "` + strings.Repeat("n", 64) + `" is 64 characters long; the limit is 63`,
				`13:7 spec.components[5].name: missing required field`,
			},
			"lower-case letters, digits and '-'",
		},
		{
			"duplicate component names",
			header + `    - name: net
      type: script
      script: {apply: x}
    - name: net
      type: script
      script: {apply: x}
`,
			[]string{`11:7 spec.components[1].name: component "net" is declared twice`},
			"the first is spec.components[0] (line 8)",
		},

		// dependsOn.
		{
			"dependsOn names a missing component",
			header + `    - name: networking
      type: script
      script: {apply: x}
    - name: eks
      type: script
      script: {apply: x}
      dependsOn: [networkings]
`,
			[]string{`14:19 spec.components[1].dependsOn[0]: component "networkings" does not exist`},
			`did you mean "networking"?`,
		},
		{
			"dependsOn names itself",
			header + "    - {name: a, type: script, script: {apply: x}, dependsOn: [a]}\n",
			[]string{`8:63 spec.components[0].dependsOn[0]: component "a" depends on itself`},
			"remove it from dependsOn",
		},
		{
			"dependsOn lists one twice",
			header + "    - {name: a, type: script, script: {apply: x}}\n    - {name: b, type: script, script: {apply: x}, dependsOn: [a, a]}\n",
			[]string{`warning 9:66 spec.components[1].dependsOn[1]: "a" is listed twice in dependsOn`},
			"",
		},

		// Cycles.
		{
			"three-component cycle named in order",
			header + `    - {name: c, type: script, script: {apply: x}, dependsOn: [b]}
    - {name: a, type: script, script: {apply: x}, dependsOn: [c]}
    - {name: b, type: script, script: {apply: x}, dependsOn: [a]}
`,
			[]string{`9:51 spec.components[1].dependsOn: cycle: a → b → c → a`},
			"break the cycle",
		},
		{
			"two separate cycles both reported",
			header + `    - {name: x, type: script, script: {apply: x}, dependsOn: [y]}
    - {name: y, type: script, script: {apply: x}, dependsOn: [x]}
    - {name: a, type: script, script: {apply: x}, dependsOn: [b]}
    - {name: b, type: script, script: {apply: x}, dependsOn: [a]}
    - {name: ok, type: script, script: {apply: x}, dependsOn: [a]}
`,
			[]string{
				`8:51 spec.components[0].dependsOn: cycle: x → y → x`,
				`10:51 spec.components[2].dependsOn: cycle: a → b → a`,
			},
			"",
		},
		{
			"cycle through valueFrom",
			header + `    - name: a
      type: script
      script: {apply: x}
      outputs: [{name: id}]
      dependsOn: [b]
    - name: b
      type: script
      script: {apply: x}
      variables: [{name: a_id, valueFrom: a.id}]
`,
			[]string{`12:7 spec.components[0].dependsOn: cycle: a → b → a`},
			"",
		},

		// valueFrom.
		{
			"valueFrom forms",
			header + `    - name: net
      type: script
      script: {apply: x}
      outputs: [{name: vpc_id}, {name: subnets}, {name: Mixed_Case-1}]
    - name: app
      type: script
      script: {apply: x}
      variables:
        - {name: ok1, valueFrom: net.vpc_id}
        - {name: ok2, valueFrom: "net.subnets[0]"}
        - {name: ok3, valueFrom: "net.subnets[12]"}
        - {name: ok4, valueFrom: net.Mixed_Case-1}
        - {name: bad1, valueFrom: net}
        - {name: bad2, valueFrom: net.}
        - {name: bad3, valueFrom: .vpc_id}
        - {name: bad4, valueFrom: "net.subnets[x]"}
        - {name: bad5, valueFrom: "net.subnets[-1]"}
        - {name: bad6, valueFrom: "net.subnets[0][1]"}
        - {name: bad7, valueFrom: net.vpc_id.x}
        - {name: bad8, valueFrom: Net.vpc_id}
        - {name: bad9, valueFrom: "net.subnets[]"}
`,
			[]string{
				`20:24 spec.components[1].variables[4].valueFrom: "net" is not of the form component.output or component.output[N]`,
				`21:24 spec.components[1].variables[5].valueFrom: "net." is not of the form component.output or component.output[N]`,
				`22:24 spec.components[1].variables[6].valueFrom: ".vpc_id" is not of the form component.output or component.output[N]`,
				`23:24 spec.components[1].variables[7].valueFrom: "net.subnets[x]" is not of the form component.output or component.output[N]`,
				`24:24 spec.components[1].variables[8].valueFrom: "net.subnets[-1]" is not of the form component.output or component.output[N]`,
				`25:24 spec.components[1].variables[9].valueFrom: "net.subnets[0][1]" is not of the form component.output or component.output[N]`,
				`26:24 spec.components[1].variables[10].valueFrom: "net.vpc_id.x" is not of the form component.output or component.output[N]`,
				`27:24 spec.components[1].variables[11].valueFrom: "Net.vpc_id" is not of the form component.output or component.output[N]`,
				`28:24 spec.components[1].variables[12].valueFrom: "net.subnets[]" is not of the form component.output or component.output[N]`,
			},
			"e.g. valueFrom: networking.vpc_id or networking.private_subnets[0]",
		},
		{
			"valueFrom in CloudKnit's old form",
			header + `    - {name: networking, type: script, script: {apply: x}, outputs: [{name: private_subnets}]}
    - name: ec2
      type: script
      script: {apply: x}
      variables:
        - name: subnet_id
          valueFrom: data.terraform_remote_state.networking.outputs.private_subnets[0]
`,
			[]string{`14:11 spec.components[1].variables[0].valueFrom: "data.terraform_remote_state.networking.outputs.private_subnets[0]" is not of the form component.output or component.output[N]`},
			"old form; write valueFrom: networking.private_subnets[0]",
		},
		{
			"valueFrom names an undeclared output (close to a declared one)",
			header + `    - {name: net, type: script, script: {apply: x}, outputs: [{name: vpc_id}]}
    - {name: app, type: script, script: {apply: x}, variables: [{name: v, valueFrom: net.vpcid}]}
`,
			[]string{`9:75 spec.components[1].variables[0].valueFrom: component "net" does not declare output "vpcid"`},
			`did you mean "vpc_id"?`,
		},
		{
			"valueFrom names an undeclared output",
			header + `    - {name: net, type: script, script: {apply: x}}
    - {name: app, type: script, script: {apply: x}, variables: [{name: v, valueFrom: "net.subnets[0]"}]}
`,
			[]string{`9:75 spec.components[1].variables[0].valueFrom: component "net" does not declare output "subnets"`},
			`add {name: subnets} to the outputs of "net"`,
		},
		{
			"valueFrom names a missing component",
			header + `    - {name: net, type: script, script: {apply: x}, outputs: [{name: id}]}
    - {name: app, type: script, script: {apply: x}, variables: [{name: v, valueFrom: nett.id}]}
`,
			[]string{`9:75 spec.components[1].variables[0].valueFrom: component "nett" does not exist`},
			`did you mean "net"?`,
		},
		{
			"valueFrom names its own component",
			header + "    - {name: a, type: script, script: {apply: x}, outputs: [{name: id}], variables: [{name: v, valueFrom: a.id}]}\n",
			[]string{`8:96 spec.components[0].variables[0].valueFrom: component "a" cannot take a value from itself`},
			"",
		},
		{
			"value and valueFrom together",
			header + `    - {name: net, type: script, script: {apply: x}, outputs: [{name: id}]}
    - {name: app, type: script, script: {apply: x}, variables: [{name: v, value: 1, valueFrom: net.id}]}
`,
			[]string{`9:65 spec.components[1].variables[0]: set value or valueFrom, not both`},
			"",
		},
		{
			"variable and output names",
			header + `    - name: a
      type: script
      script: {apply: x}
      variables: [{name: v, value: 1}, {name: v, value: 2}, {value: 3}]
      outputs: [{name: o}, {name: o}, {sensitive: true}]
`,
			[]string{
				`11:41 spec.components[0].variables[1].name: variable "v" is set twice`,
				`11:61 spec.components[0].variables[2].name: missing required field`,
				`12:29 spec.components[0].outputs[1].name: output "o" is declared twice`,
				`12:39 spec.components[0].outputs[2].name: missing required field`,
			},
			"",
		},

		// Paths.
		{
			"module source escapes the folder",
			header + "    - {name: a, type: terraform, module: {source: ../modules/net}}\n",
			[]string{`8:43 spec.components[0].module.source: path "../modules/net" leaves the environment's folder`},
			"keep modules inside the environment's folder",
		},
		{
			"module source folder does not exist",
			header + "    - {name: a, type: terraform, module: {source: ./modules/nope}}\n",
			[]string{`8:43 spec.components[0].module.source: module folder "./modules/nope" does not exist`},
			"relative to the environment file's folder",
		},
		{
			"module path escapes the module",
			header + "    - {name: a, type: terraform, module: {source: ./modules/app, path: ../../x}}\n",
			[]string{`8:66 spec.components[0].module.path: path "../../x" must stay inside the module's source`},
			"",
		},
		{
			"module path inside the module",
			header + "    - {name: a, type: terraform, module: {source: ./modules/app, path: sub}}\n    - {name: b, type: terraform, module: {source: aws, name: vpc, path: modules/x..y}}\n",
			nil, "",
		},
		{
			"local variablesFile escapes the folder",
			header + "    - {name: a, type: terraform, module: {source: ./modules/net}, variablesFile: {path: ../secrets.tfvars}}\n",
			[]string{`8:83 spec.components[0].variablesFile.path: path "../secrets.tfvars" leaves the environment's folder`},
			"keep files inside the environment's folder",
		},
		{
			"absolute variablesFile outside the folder",
			header + "    - {name: a, type: terraform, module: {source: ./modules/net}, variablesFile: {path: /etc/passwd}}\n",
			[]string{`8:83 spec.components[0].variablesFile.path: path "/etc/passwd" leaves the environment's folder`},
			"",
		},
		{
			"local variablesFile does not exist",
			header + "    - {name: a, type: terraform, module: {source: ./modules/net}, variablesFile: {path: vars/nope.tfvars}}\n",
			[]string{`8:83 spec.components[0].variablesFile.path: "vars/nope.tfvars" does not exist`},
			"",
		},
		{
			"git variablesFile escapes the repository",
			header + "    - {name: a, type: terraform, module: {source: ./modules/net}, variablesFile: {source: 'git@github.com:o/r.git', path: ../x.tfvars}}\n",
			[]string{`8:117 spec.components[0].variablesFile.path: path "../x.tfvars" must stay inside the repository`},
			"",
		},
		{
			"variablesFile without a path",
			header + "    - {name: a, type: terraform, module: {source: ./modules/net}, variablesFile: {source: 'git@github.com:o/r.git'}}\n",
			[]string{`8:67 spec.components[0].variablesFile.path: missing required field`},
			"",
		},
		{
			"overlay paths escape the folder or the repository",
			header + `    - name: a
      type: terraform
      module: {source: ./modules/net}
      overlayFiles:
        - paths: [overlays/extra.tf, ../../etc/passwd, overlays/nope.tf]
        - {source: 'git@github.com:o/r.git', paths: [ok/x.tf, ../x.tf]}
        - {source: 'git@github.com:o/r.git'}
`,
			[]string{
				`12:38 spec.components[0].overlayFiles[0].paths[1]: path "../../etc/passwd" leaves the environment's folder`,
				`12:56 spec.components[0].overlayFiles[0].paths[2]: "overlays/nope.tf" does not exist`,
				`13:63 spec.components[0].overlayFiles[1].paths[1]: path "../x.tf" must stay inside the repository`,
				`14:11 spec.components[0].overlayFiles[2].paths: missing required field`,
			},
			"",
		},
		{
			"overlayData names a plain file",
			header + `    - name: a
      type: terraform
      module: {source: ./modules/net}
      overlayData: [{name: ../x.sh, data: x}, {name: ok.sh, data: x}, {data: x}]
`,
			[]string{
				`11:22 spec.components[0].overlayData[0].name: "../x.sh" must be a plain file name`,
				`11:71 spec.components[0].overlayData[2].name: missing required field`,
			},
			"",
		},
		{
			"chart and manifests paths escape the folder",
			header + `    - {name: web, type: helm, chart: {path: ../charts/web}}
    - {name: k8s, type: manifests, manifests: {path: /tmp}}
`,
			[]string{
				`8:39 spec.components[0].chart.path: path "../charts/web" leaves the environment's folder`,
				`9:48 spec.components[1].manifests.path: path "/tmp" leaves the environment's folder`,
			},
			"",
		},

		// destroy and teardown.
		{
			"destroy with teardown",
			strings.Replace(header, "  components:", "  teardown: true\n  components:", 1) +
				"    - {name: a, type: script, script: {apply: x}, destroy: true}\n",
			[]string{`9:51 spec.components[0].destroy: destroy: true conflicts with spec.teardown: true`},
			"remove destroy from this component",
		},
		{
			"destroy without teardown",
			header + "    - {name: a, type: script, script: {apply: x}, destroy: true}\n",
			nil, "",
		},

		// Types and blocks.
		{
			"missing type",
			header + "    - {name: a, module: {source: ./modules/net}}\n",
			[]string{`8:7 spec.components[0].type: missing required field`},
			"one of: terraform, helm, manifests, script",
		},
		{
			"misspelt type",
			header + "    - {name: a, type: terrafrom, module: {source: ./modules/net}}\n",
			[]string{`8:17 spec.components[0].type: unsupported component type "terrafrom"`},
			`did you mean "terraform"?`,
		},
		{
			"block missing for the type",
			header + `    - {name: a, type: terraform}
    - {name: b, type: helm}
    - {name: c, type: manifests}
    - {name: d, type: script}
`,
			[]string{
				`8:7 spec.components[0].module: missing required field`,
				`9:7 spec.components[1].chart: missing required field`,
				`10:7 spec.components[2].manifests: missing required field`,
				`11:7 spec.components[3].script: missing required field`,
			},
			"a terraform component needs a module block",
		},
		{
			"block of another type",
			header + "    - {name: a, type: terraform, module: {source: ./modules/net}, chart: {path: ./charts/web}, script: {apply: x}}\n",
			[]string{
				`8:67 spec.components[0].chart: chart is only for type helm components`,
				`8:96 spec.components[0].script: script is only for type script components`,
			},
			"",
		},
		{
			"incomplete blocks",
			header + `    - {name: a, type: terraform, module: {name: vpc}}
    - {name: b, type: helm, chart: {repo: https://charts.example.com}}
    - {name: c, type: manifests, manifests: {namespace: x}}
    - {name: d, type: script, script: {plan: x}}
    - {name: e, type: terraform, module: {source: aws}}
`,
			[]string{
				`8:34 spec.components[0].module.source: missing required field`,
				`9:29 spec.components[1].chart.name: missing required field`,
				`10:34 spec.components[2].manifests.path: missing required field`,
				`11:31 spec.components[3].script.apply: missing required field`,
				`12:34 spec.components[4].module.name: source "aws" needs module.name (e.g. name: vpc)`,
			},
			"the chart's name in the repository",
		},
		{
			"module source of no known kind",
			header + "    - {name: a, type: terraform, module: {source: vpc}}\n",
			[]string{`8:43 spec.components[0].module.source: cannot tell what kind of module source "vpc" is`},
			"a git URL (?ref=)",
		},
		{
			"a registry source's version that is no constraint",
			header + "    - {name: a, type: terraform, module: {source: terraform-aws-modules/vpc/aws, version: \"~> one\"}}\n",
			[]string{`8:82 spec.components[0].module.version: "~> one" is not a version constraint`},
			"~> 1.1",
		},

		// apiVersions.
		{
			"knit-only types under CloudKnit's apiVersion",
			strings.Replace(header, "knit.dev/v1", "stable.cloudknit.io/v1", 1) + `    - {name: a, type: helm, chart: {path: ./charts/web}}
    - {name: b, type: script, script: {apply: x}}
    - {name: c, type: manifests, manifests: {path: ./k8s}}
    - {name: d, type: argocd}
`,
			[]string{
				`8:17 spec.components[0].type: unsupported component type "helm"`,
				`9:17 spec.components[1].type: unsupported component type "script"`,
				`10:17 spec.components[2].type: unsupported component type "manifests"`,
				`11:17 spec.components[3].type: unsupported component type "argocd"`,
			},
			"type helm needs apiVersion: knit.dev/v1",
		},
		{
			"CloudKnit's old apiVersion is still checked as an environment",
			strings.Replace(header, "knit.dev/v1", "stable.cloudknit.io/v1alpha1", 1) + `    - {name: net, type: terraform, module: {source: ./modules/net}}
    - {name: eks, type: terraform, module: {source: ./modules/app}, dependsOn: [nett]}
`,
			[]string{
				`1:1 apiVersion: unsupported apiVersion "stable.cloudknit.io/v1alpha1"`,
				`9:81 spec.components[1].dependsOn[0]: component "nett" does not exist`,
			},
			"change apiVersion to it",
		},

		// selectiveReconcile.
		{
			"selectiveReconcile needs a tag and values",
			strings.Replace(header, "  components:", "  selectiveReconcile: {skipMode: true}\n  components:", 1) +
				"    - {name: a, type: script, script: {apply: x}}\n",
			[]string{
				`7:3 spec.selectiveReconcile.tagName: missing required field`,
				`7:3 spec.selectiveReconcile.tagValues: missing required field`,
			},
			"",
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

func TestCyclesAreDeterministic(t *testing.T) {
	src := header + `    - {name: d, type: script, script: {apply: x}, dependsOn: [c]}
    - {name: c, type: script, script: {apply: x}, dependsOn: [d, b]}
    - {name: b, type: script, script: {apply: x}, dependsOn: [a]}
    - {name: a, type: script, script: {apply: x}, dependsOn: [c]}
`
	_, first := parse(t, src)
	want := []string{
		`9:51 spec.components[1].dependsOn: cycle: c → d → c`,
		`11:51 spec.components[3].dependsOn: cycle: a → b → c → a`,
	}
	wantDiags(t, first, want)
	for range 20 {
		_, again := parse(t, src)
		wantDiags(t, again, want)
	}
}

func TestNotYetSupportedFieldsAreKept(t *testing.T) {
	env, ds := parse(t, strings.Replace(header, "  components:", "  workspace: ws-1\n  components:", 1)+`    - name: a
      type: terraform
      subtype: aws
      cronSchedule: "0 * * * *"
      module: {source: ./modules/net}
      aws:
        region: eu-west-1
        assumeRole: {roleArn: "arn:aws:iam::1:role/x", sessionName: s, externalId: e}
      secrets:
        - {name: db_password, scope: team, key: db}
`)
	wantDiags(t, ds, []string{
		`warning 7:3 spec.workspace: not yet supported: knit keeps the field but does not act on it`,
		`warning 11:7 spec.components[0].subtype: not yet supported: subtype`,
		`warning 14:7 spec.components[0].aws: not yet supported: aws`,
		`warning 17:7 spec.components[0].secrets: not yet supported: secrets`,
	})
	if ds.HasErrors() {
		t.Fatal("warnings only, yet HasErrors")
	}
	c := env.Component("a")
	want := &Component{
		Name: "a", Type: TypeTerraform, Subtype: "aws", CronSchedule: "0 * * * *",
		Module: &Module{Source: "./modules/net"},
		AWS: &AWS{Region: "eu-west-1", AssumeRole: &AssumeRole{
			RoleARN: "arn:aws:iam::1:role/x", SessionName: "s", ExternalID: "e"}},
		Secrets: []Secret{{Name: "db_password", Scope: "team", Key: "db"}},
	}
	if !reflect.DeepEqual(c, want) {
		t.Errorf("component = %+v\nwant %+v", c, want)
	}
	if env.Spec.Workspace != "ws-1" {
		t.Errorf("workspace = %q", env.Spec.Workspace)
	}
}

func TestValueFromAddsAnEdge(t *testing.T) {
	env := mustParse(t, header+`    - {name: net, type: script, script: {apply: x}, outputs: [{name: id}, {name: subnets}]}
    - {name: db, type: script, script: {apply: x}, variables: [{name: s, valueFrom: "net.subnets[1]"}], outputs: [{name: url}]}
    - name: app
      type: script
      script: {apply: x}
      dependsOn: [net]
      variables:
        - {name: a, valueFrom: net.id}
        - {name: b, valueFrom: db.url}
`)
	if got := env.Dependencies(env.Component("db")); !reflect.DeepEqual(got, []string{"net"}) {
		t.Errorf("Dependencies(db) = %v, want [net] from valueFrom alone", got)
	}
	if got := env.Dependencies(env.Component("app")); !reflect.DeepEqual(got, []string{"db", "net"}) {
		t.Errorf("Dependencies(app) = %v, want [db net], deduplicated and sorted", got)
	}
	g := env.Graph()
	if got := g.DependenciesOf("db"); !reflect.DeepEqual(got, []string{"net"}) {
		t.Errorf("graph: db depends on %v, want [net]", got)
	}
	levels, err := g.Levels()
	if err != nil {
		t.Fatal(err)
	}
	if want := [][]string{{"net"}, {"db"}, {"app"}}; !reflect.DeepEqual(levels, want) {
		t.Errorf("levels = %v, want %v", levels, want)
	}
}

func TestParseValueFrom(t *testing.T) {
	idx := func(n int) *int { return &n }
	tests := []struct {
		in   string
		want ValueRef
		ok   bool
	}{
		{"net.vpc_id", ValueRef{Component: "net", Output: "vpc_id"}, true},
		{"net-1.subnets[0]", ValueRef{Component: "net-1", Output: "subnets", Index: idx(0)}, true},
		{"net.subnets[42]", ValueRef{Component: "net", Output: "subnets", Index: idx(42)}, true},
		{"net", ValueRef{}, false},
		{"net.a.b", ValueRef{}, false},
		{"net.a[99999999999999999999]", ValueRef{}, false},
		{"", ValueRef{}, false},
	}
	for _, tt := range tests {
		got, ok := ParseValueFrom(ValueFrom(tt.in))
		if ok != tt.ok || !reflect.DeepEqual(got, tt.want) {
			t.Errorf("ParseValueFrom(%q) = %+v, %v; want %+v, %v", tt.in, got, ok, tt.want, tt.ok)
		}
	}
}

func TestEffectiveAutoApprove(t *testing.T) {
	env := mustParse(t, strings.Replace(header, "  components:", "  autoApprove: true\n  components:", 1)+`    - {name: a, type: script, script: {apply: x}}
    - {name: b, type: script, script: {apply: x}, autoApprove: false}
`)
	if !env.EffectiveAutoApprove(env.Component("a")) || env.EffectiveAutoApprove(env.Component("b")) {
		t.Error("a component's autoApprove must override the environment's, and only when set")
	}
}

func TestSchedulesAreCheckedWhereTheyAreWritten(t *testing.T) {
	_, ds := parse(t, strings.Replace(header, "  components:", "  drift: {schedule: \"@every 5s\", policy: fix}\n  components:", 1)+`    - name: a
      type: terraform
      cronSchedule: "61 * * * *"
      module: {source: ./modules/net}
`)
	wantDiags(t, ds, []string{
		`7:34 spec.drift.policy: unknown drift policy "fix"`,
		`11:7 spec.components[0].cronSchedule: minute field: 61 is out of range 0-59`,
	})
}
