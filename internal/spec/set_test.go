package spec

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"knit.dev/knit/internal/diag"
)

func setFile(generators string) string {
	return `apiVersion: knit.dev/v1
kind: EnvironmentSet
metadata: {name: previews}
spec:
  teamName: shop
  envName: "{{ .name }}"
  template: {path: ../templates/web-stack.yaml}
  ttl: 72h
  parameters: {tier: dev}
  generators:
` + generators
}

const threeElements = `    - list:
        elements:
          - {name: alpha, parameters: {size: 1}}
          - {name: beta, parameters: {size: 2}}
          - {name: gamma, parameters: {size: 3}}
`

func loadSet(t testing.TB, content string) (*Set, diag.Diagnostics) {
	t.Helper()
	dir := repo(t, map[string]string{"templates/web-stack.yaml": webStack, "modules/app/main.tf": modApp, "envs/set.yaml": content})
	data, err := os.ReadFile(filepath.Join(dir, "envs/set.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	return ParseSet("envs/set.yaml", filepath.Join(dir, "envs"), dir, data, Options{})
}

func TestSetListExpandsIntoResolvedEnvironments(t *testing.T) {
	s, ds := loadSet(t, setFile(threeElements))
	if ds.HasErrors() {
		t.Fatal(ds)
	}
	envs, ds := s.Expand(nil)
	if ds.HasErrors() {
		t.Fatal(ds)
	}
	var names []string
	for _, e := range envs {
		names = append(names, e.ID())
		if len(e.Spec.Components) != 2 || e.Sources[0].Kind != SourceSet || e.Sources[1].Kind != "template" {
			t.Errorf("%s: components %d, sources %+v", e.ID(), len(e.Spec.Components), e.Sources)
		}
	}
	if got := strings.Join(names, ","); got != "shop/alpha,shop/beta,shop/gamma" {
		t.Fatalf("environments %s", got)
	}
	if v := envs[1].Spec.Components[0].Variables[0]; v.Name != "size" || v.Value != int64(2) {
		t.Errorf("beta's size is %#v, want 2 from its element", v)
	}
}

func TestSetGitBranchesAndMatrix(t *testing.T) {
	branches := []string{"main", "feature/a", "feature/Big_Thing", "feature/x/y", "fix/b"}
	s, ds := loadSet(t, strings.Replace(setFile(`    - gitBranches: {pattern: "feature/*"}
`), `"{{ .name }}"`, `"pr-{{ .branch.slug }}"`, 1))
	if ds.HasErrors() {
		t.Fatal(ds)
	}
	els, ds := s.Elements(branches)
	if ds.HasErrors() {
		t.Fatal(ds)
	}
	var names []string
	for _, e := range els {
		names = append(names, e.Name)
	}
	if got := strings.Join(names, ","); got != "pr-feature-a,pr-feature-big-thing" {
		t.Fatalf("elements %s", got)
	}
	s, ds = loadSet(t, strings.Replace(setFile(`    - matrix:
        generators:
          - list: {elements: [{region: eu}, {region: us}]}
          - gitBranches: {pattern: "feature/*"}
`), `"{{ .name }}"`, `"{{ .region }}-{{ .branch.slug }}"`, 1))
	if ds.HasErrors() {
		t.Fatal(ds)
	}
	envs, ds := s.Expand([]string{"feature/a", "feature/b"})
	if ds.HasErrors() || len(envs) != 4 || envs[0].Spec.EnvName != "eu-feature-a" || envs[3].Spec.EnvName != "us-feature-b" {
		t.Fatalf("matrix: %d environments, %s", len(envs), ds)
	}
}

// Every mistake is reported at the line that holds it.
func TestSetMistakesAreReportedWhereWritten(t *testing.T) {
	for _, tc := range []struct{ name, gens, branch, want string }{
		{"unknown generator", "    - pullRequests: {}\n", "", "11:7 spec.generators[0].pullRequests: unknown field"},
		{"bad pattern", "    - gitBranches: {pattern: \"feature/[\"}\n", "", "11:20 spec.generators[0].gitBranches.pattern: gitBranches needs a valid pattern"},
		{"duplicate names", "    - list: {elements: [{name: a}, {name: a}]}\n", "", `11:36 spec.generators[0].list.elements[1]: two elements generate the envName "a" (the other is at envs/set.yaml:11:25)`},
		{"invalid name", "    - list: {elements: [{name: Not_OK}]}\n", "", `11:25 spec.generators[0].list.elements[0]: the generated envName "Not_OK" is not a valid name`},
		{"missing field", "    - list: {elements: [{nom: a}]}\n", "", `11:25 spec.generators[0].list.elements[0]: envName cannot be made for this element`},
		{"unknown parameter", "    - list: {elements: [{name: a, parameters: {colour: red}}]}\n", "", `11:48 spec.parameters.colour: unknown parameter`},
		{"matrix of one", "    - matrix: {generators: [{list: {elements: []}}]}\n", "", `11:15 spec.generators[0].matrix: matrix has 1 generators`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, ds := loadSet(t, setFile(tc.gens))
			if !ds.HasErrors() {
				_, ds = s.Expand([]string{tc.branch})
			}
			got := strings.Join(render(ds), "\n")
			if !strings.Contains(got, tc.want) {
				t.Fatalf("got\n%s\nwant a line starting %q", got, tc.want)
			}
			for _, d := range ds {
				if d.Pos.File != "envs/set.yaml" {
					t.Errorf("diagnostic %q in %q, want envs/set.yaml", d.Message, d.Pos.File)
				}
			}
		})
	}
}

func TestSetElementCountIsBounded(t *testing.T) {
	var b strings.Builder
	b.WriteString("    - matrix:\n        generators:\n          - list: {elements: [")
	for i := range 40 {
		b.WriteString("{a: " + strings.Repeat("x", i+1) + "},")
	}
	b.WriteString("]}\n          - list: {elements: [")
	for i := range 30 {
		b.WriteString("{b: " + strings.Repeat("y", i+1) + "},")
	}
	b.WriteString("]}\n")
	s, ds := loadSet(t, setFile(b.String()))
	if ds.HasErrors() {
		t.Fatal(ds)
	}
	_, ds = s.Expand(nil)
	if got := strings.Join(render(ds), "\n"); !strings.Contains(got, "10:3 spec.generators: the set's generators yield more than 1000 elements") {
		t.Fatalf("got %s", got)
	}
}

func TestKindOf(t *testing.T) {
	if KindOf([]byte(setFile(threeElements))) != KindSet || KindOf([]byte(webStack)) != KindTemplate || KindOf([]byte("- a")) != "" {
		t.Fatal("KindOf")
	}
}

// BenchmarkExpandSet100 measures parsing a set of 100 list elements and
// expanding it: each element's environment resolved from the template and
// validated (issue 26: a hundred environments in under a second).
func BenchmarkExpandSet100(b *testing.B) {
	var els []string
	for i := range 100 {
		els = append(els, fmt.Sprintf("{name: env%03d, parameters: {size: %d}}", i, i))
	}
	dir := repo(b, map[string]string{"templates/web-stack.yaml": webStack, "modules/app/main.tf": modApp})
	data := []byte(setFile("    - list: {elements: [" + strings.Join(els, ", ") + "]}\n"))
	for b.Loop() {
		s, ds := ParseSet("envs/set.yaml", filepath.Join(dir, "envs"), dir, data, Options{})
		if ds.HasErrors() {
			b.Fatal(ds)
		}
		envs, ds := s.Expand(nil)
		if ds.HasErrors() || len(envs) != 100 {
			b.Fatal(len(envs), ds)
		}
	}
}

// TestSetTTLReachesEveryEnvironment: a set's ttl is each generated
// environment's spec.ttl, and a bad one is reported once, at the set's line.
func TestSetTTLReachesEveryEnvironment(t *testing.T) {
	s, ds := loadSet(t, setFile(threeElements))
	if ds.HasErrors() {
		t.Fatal(ds)
	}
	envs, ds := s.Expand(nil)
	if ds.HasErrors() {
		t.Fatal(ds)
	}
	for _, e := range envs {
		if d := e.Spec.TTLDuration(); d.Hours() != 72 {
			t.Errorf("%s: ttl %v; want 72h from the set", e.ID(), d)
		}
	}
	s, ds = loadSet(t, strings.Replace(setFile(threeElements), "ttl: 72h", "ttl: 3 days", 1))
	if !ds.HasErrors() {
		_, ds = s.Expand(nil)
	}
	if got := ds.String(); !strings.Contains(got, "envs/set.yaml:8") || !strings.Contains(got, "not a duration") || strings.Count(got, "not a duration") != 1 {
		t.Errorf("a bad ttl of a set: want one error at envs/set.yaml:8, got:\n%s", got)
	}
}
