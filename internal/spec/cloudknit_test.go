package spec

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"knit.dev/knit/internal/diag"
)

// cloudknitDir holds files copied verbatim from github.com/cloudknit-io/cloudknit;
// its README says which are valid against CloudKnit's own schema and validator.
const cloudknitDir = "../../testdata/cloudknit"

// placeholders are what CloudKnit's getting-started script and docs ask
// people to fill in; the fixtures keep them, the test fills them.
var placeholders = strings.NewReplacer(
	"${company}", "zmart", "${team}", "checkout", "${env}", "dev",
	"${YourOrgName}", "zmart", "${YourTeamName}", "checkout", "${TeamName}", "checkout", "${EnvName}", "staging",
)

func readCloudKnit(t *testing.T, name string) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(cloudknitDir, name))
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func parseCloudKnit(t *testing.T, name string) (*Environment, diag.Diagnostics) {
	t.Helper()
	data := []byte(placeholders.Replace(string(readCloudKnit(t, name))))
	if strings.Contains(string(data), "${") {
		t.Fatalf("%s: a placeholder is left unfilled", name)
	}
	return Parse(name, cloudknitDir, data)
}

func TestCloudKnitValidFiles(t *testing.T) {
	for _, name := range []string{
		"docs-examples-checkout-staging.yaml",
		"docs-approval-checkout-sandbox.yaml",
		"k8s-provider-env.yaml",
		"first-environment.yaml",
	} {
		t.Run(name, func(t *testing.T) {
			env, ds := parseCloudKnit(t, name)
			if env == nil || ds.HasErrors() {
				t.Fatalf("CloudKnit marks %s valid; knit says:\n%s", name, ds)
			}
			if len(ds) != 0 {
				t.Errorf("unexpected warnings:\n%s", ds)
			}
			if env.APIVersion != APIVersionCloudKnit {
				t.Errorf("apiVersion = %q", env.APIVersion)
			}
		})
	}
}

func TestCloudKnitCheckoutStaging(t *testing.T) {
	env, _ := parseCloudKnit(t, "docs-examples-checkout-staging.yaml")
	if env.ID() != "checkout/staging" || env.Metadata.Namespace != "zmart-config" {
		t.Errorf("identity = %s in %s", env.ID(), env.Metadata.Namespace)
	}
	ec2 := env.Component("platform-ec2")
	if ref, ok := ParseValueFrom(ec2.Variables[0].ValueFrom); !ok || ref.Component != "networking" || ref.Output != "private_subnets" || *ref.Index != 0 {
		t.Errorf("valueFrom = %q parsed as %+v", ec2.Variables[0].ValueFrom, ref)
	}
	want := VariablesFile{Source: "https://github.com/zl-zmart-tech/checkout-team-config.git", Path: "staging/tfvars/ec2.tfvars"}
	if *ec2.VariablesFile != want {
		t.Errorf("variablesFile = %+v", ec2.VariablesFile)
	}
	src, err := env.ModuleSource(ec2.Module)
	if err != nil || src.URL != "https://github.com/terraform-aws-modules/terraform-aws-ec2-instance.git" {
		t.Errorf("aws+ec2-instance resolves to %+v, %v", src, err)
	}
	if levels, err := env.Graph().Levels(); err != nil || !reflect.DeepEqual(levels, [][]string{{"networking"}, {"platform-ec2"}}) {
		t.Errorf("levels = %v, %v", levels, err)
	}
}

func TestCloudKnitApprovalOverride(t *testing.T) {
	env, _ := parseCloudKnit(t, "docs-approval-checkout-sandbox.yaml")
	if env.Spec.AutoApprove || !env.EffectiveAutoApprove(env.Component("networking")) {
		t.Error("the component's autoApprove: true must override the environment's false")
	}
	if env.Spec.EnvName != "sandbox" {
		t.Errorf("envName = %q (trailing spaces in the file must not count)", env.Spec.EnvName)
	}
}

func TestCloudKnitK8sProvider(t *testing.T) {
	env, _ := parseCloudKnit(t, "k8s-provider-env.yaml")
	net, eks := env.Component("networking"), env.Component("eks")
	if !net.DestroyProtection || len(net.Outputs) != 3 || len(eks.Outputs) != 3 {
		t.Errorf("networking = %+v, eks = %+v", net, eks)
	}
	if got := eks.OverlayFiles; len(got) != 1 || !reflect.DeepEqual(got[0].Paths, []string{"examples/k8s-provider/env/overlays/eks.tf"}) {
		t.Errorf("overlayFiles = %+v", got)
	}
	src, err := env.ModuleSource(eks.Module)
	if err != nil || src.Kind != SourceGit || src.URL != "git@github.com:terraform-aws-modules/terraform-aws-eks.git" || src.Ref != "v19.4.2" {
		t.Errorf("eks module = %+v, %v", src, err)
	}
}

func TestCloudKnitInvalidFiles(t *testing.T) {
	tests := []struct {
		file   string
		nilEnv bool
		want   []string // every diagnostic
		hints  []string // hints that must be given
	}{
		{
			file: "cli-test-env-invalid-dependson.yaml",
			want: []string{
				`1:1 apiVersion: unsupported apiVersion "stable.cloudknit.io/v1alpha1"`,
				`28:19 spec.components[2].dependsOn[0]: component "networkings" does not exist`,
			},
			hints: []string{"CloudKnit's current version is stable.cloudknit.io/v1", `did you mean "networking"?`},
		},
		{
			file: "environment-reference.yaml",
			want: []string{
				`warning 35:7 spec.components[0].aws: not yet supported: aws`,
				`74:11 spec.components[0].variables[1].valueFrom: "data.terraform_remote_state.s3-common.outputs.bucket_acl" is not of the form component.output or component.output[N]`,
				`warning 76:7 spec.components[0].secrets: not yet supported: secrets`,
				`95:11 spec.components[0].overlayFiles[0].paths: missing required field`,
				`97:11 spec.components[0].overlayFiles[0].path: unknown field "path"`,
				`143:11 spec.components[4].variables[0].valueFrom: "data.terraform_remote_state.networking.outputs.private_subnets[0]" is not of the form component.output or component.output[N]`,
			},
			hints: []string{
				`did you mean "paths"?`,
				`write valueFrom: s3-common.bucket_acl (no component is named "s3-common" yet)`,
				`write valueFrom: networking.private_subnets[0]`,
			},
		},
		{
			file: "readme-zmart-payment-prod-blue.yaml",
			want: []string{
				// knit reads a variablesFile without source from the environment's folder; these are not in it.
				`19:9 spec.components[0].variablesFile.path: "prod-blue/vars/networking.tfvars" does not exist`,
				`32:9 spec.components[1].variablesFile.path: "prod-blue/vars/platform-eks.tfvars" does not exist`,
				`35:7 spec.components[2].type: unsupported component type "helm"`,
				`37:7 spec.components[2].source: unknown field "source"`,
			},
			hints: []string{"type helm needs apiVersion: knit.dev/v1", "a helm chart goes in chart:"},
		},
		{
			file:   "team-template.yaml",
			nilEnv: true,
			want:   []string{`5:0 : invalid YAML: did not find expected key`},
			hints:  []string{"check indentation and quoting"},
		},
		{
			file: "company-test.yaml",
			want: []string{
				`3:1 apiVersion: unsupported apiVersion "v1"`,
				`4:1 kind: unsupported kind "Namespace"`,
				`10:1 : a second YAML document: an environment file holds exactly one`,
			},
			hints: []string{"knit reads kind: Environment, EnvironmentTemplate, EnvironmentSet and Pipeline files"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			env, ds := Parse(tt.file, cloudknitDir, readCloudKnit(t, tt.file))
			if (env == nil) != tt.nilEnv {
				t.Errorf("environment = %v, want nil: %v", env, tt.nilEnv)
			}
			if !ds.HasErrors() {
				t.Fatalf("CloudKnit marks %s invalid; knit found no error", tt.file)
			}
			if got := render(ds); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("diagnostics:\n  got  %s\n  want %s", strings.Join(got, "\n       "), strings.Join(tt.want, "\n       "))
			}
			for _, h := range tt.hints {
				wantHint(t, ds, h)
			}
			for _, d := range ds {
				if d.Pos.File != tt.file {
					t.Errorf("diagnostic %q names file %q", d.Message, d.Pos.File)
				}
			}
		})
	}
}
