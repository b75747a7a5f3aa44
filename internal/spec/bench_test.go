package spec

import (
	"fmt"
	"strings"
	"testing"
)

// bigEnv is an environment of n terraform components in layers of 100,
// each taking two outputs of the layer before it, plus literal variables.
func bigEnv(tb testing.TB, n int) (dir string, doc []byte) {
	dir = envDir(tb)
	var b strings.Builder
	b.WriteString(header)
	for i := range n {
		fmt.Fprintf(&b, "    - name: c%04d\n      type: terraform\n      module: {source: ./modules/net}\n      outputs: [{name: id}, {name: secret, sensitive: true}]\n      variables:\n        - {name: size, value: %d}\n", i, i)
		if prev := (i/100 - 1) * 100; i >= 100 {
			fmt.Fprintf(&b, "        - {name: a, valueFrom: c%04d.id}\n        - {name: b, valueFrom: c%04d.secret}\n", prev+i%100, prev+(i+1)%100)
		}
	}
	return dir, []byte(b.String())
}

// BenchmarkLoad1000 measures parsing and validating a 1,000-component file.
func BenchmarkLoad1000(b *testing.B) {
	dir, doc := bigEnv(b, 1000)
	b.SetBytes(int64(len(doc)))
	for b.Loop() {
		if _, diags := Parse("env.yaml", dir, doc); diags.HasErrors() {
			b.Fatal(diags)
		}
	}
}

// BenchmarkGraph1000 measures building the dependency graph of a validated
// 1,000-component environment and grouping it into levels.
func BenchmarkGraph1000(b *testing.B) {
	dir, doc := bigEnv(b, 1000)
	env, diags := Parse("env.yaml", dir, doc)
	if diags.HasErrors() {
		b.Fatal(diags)
	}
	for b.Loop() {
		if _, err := env.Graph().Levels(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkTemplate100 measures loading 100 environments built from one
// template (parameters, an override each), validated and rendered as
// render -o yaml prints them: one op is all 100.
func BenchmarkTemplate100(b *testing.B) {
	files := map[string]string{"templates/web-stack.yaml": webStack, "modules/app/main.tf": modApp}
	for i := range 100 {
		files[fmt.Sprintf("envs/e%03d.yaml", i)] = strings.Replace(devEnv(fmt.Sprintf("{tier: prod, size: %d}", i), `  overrides:
    components:
      - name: app
        variables: [{name: label, value: custom}]
`), "envName: dev", fmt.Sprintf("envName: e%03d", i), 1)
	}
	dir := repo(b, files)
	b.Chdir(dir)
	for b.Loop() {
		for i := range 100 {
			env, diags := LoadWith(fmt.Sprintf("envs/e%03d.yaml", i), Options{RepoRoot: true})
			if diags.HasErrors() {
				b.Fatal(diags)
			}
			if _, err := Render(env, "yaml", false); err != nil {
				b.Fatal(err)
			}
		}
	}
}
