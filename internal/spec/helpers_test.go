package spec

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"knit.dev/knit/internal/diag"
)

// header is the start of every test environment: its components list
// begins on line 8, so a component's "- name:" written first sits at 8:7.
const header = `apiVersion: knit.dev/v1
kind: Environment
metadata: {name: shop-dev}
spec:
  teamName: shop
  envName: dev
  components:
`

// testModule is the modules' code: the inputs and outputs tests use.
const testModule = `variable "region" { default = null }
variable "zone" { default = null }
variable "azs" { default = null }
variable "tags" { default = null }
variable "literal" { default = null }
variable "size" {
  type    = number
  default = 0
}
variable "a" { default = null }
variable "b" { default = null }
output "id" { value = 1 }
output "secret" { value = 2 }
`

// envDir returns a folder laid out like a real environment's: module
// folders, a tfvars file, a chart, manifests and an overlay file.
func envDir(t testing.TB) string {
	t.Helper()
	dir := t.TempDir()
	for _, f := range []string{
		"modules/net/main.tf",
		"modules/app/main.tf",
		"modules/app/sub/main.tf",
		"vars/net.tfvars",
		"charts/web/Chart.yaml",
		"k8s/deploy.yaml",
		"overlays/extra.tf",
	} {
		p := filepath.Join(dir, f)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		content := "# test\n"
		if strings.HasPrefix(f, "modules/") {
			content = testModule
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// parse parses src as env.yaml in a fresh environment folder.
func parse(t testing.TB, src string) (*Environment, diag.Diagnostics) {
	t.Helper()
	return Parse("env.yaml", envDir(t), []byte(src))
}

// render turns diagnostics into "line:col field: message" lines, warnings
// prefixed "warning ", so a test can compare every problem found at once.
func render(ds diag.Diagnostics) []string {
	out := make([]string, 0, len(ds))
	for _, d := range ds {
		s := fmt.Sprintf("%d:%d %s: %s", d.Pos.Line, d.Pos.Col, d.Field, d.Message)
		if d.Severity == diag.Warning {
			s = "warning " + s
		}
		out = append(out, s)
	}
	return out
}

// wantDiags fails t unless ds renders to exactly want (in order).
func wantDiags(t *testing.T, ds diag.Diagnostics, want []string) {
	t.Helper()
	got := render(ds)
	if want == nil {
		want = []string{}
	}
	if !slices.Equal(got, want) {
		t.Errorf("diagnostics:\n  got  %s\n  want %s\nfull:\n%s",
			strings.Join(got, "\n       "), strings.Join(want, "\n       "), ds)
	}
	for _, d := range ds {
		if d.Pos.File != "env.yaml" && d.Pos.File != "" {
			t.Errorf("diagnostic %q has file %q, want env.yaml", d.Message, d.Pos.File)
		}
	}
}

// wantHint fails t unless some diagnostic's hint contains hint.
func wantHint(t *testing.T, ds diag.Diagnostics, hint string) {
	t.Helper()
	for _, d := range ds {
		if strings.Contains(d.Hint, hint) {
			return
		}
	}
	t.Errorf("no diagnostic has a hint containing %q:\n%s", hint, ds)
}

// mustParse parses src and fails t on any error diagnostic.
func mustParse(t *testing.T, src string) *Environment {
	t.Helper()
	env, ds := parse(t, src)
	if ds.HasErrors() || env == nil {
		t.Fatalf("unexpected problems:\n%s", ds)
	}
	return env
}

// writeFiles writes files (path inside dir: content) into dir.
func writeFiles(t testing.TB, dir string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
