package spec

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"knit.dev/knit/internal/diag"
)

// fuzzSeeds are small files at the edges of YAML and of the format.
var fuzzSeeds = []string{
	"",
	"~",
	"---\n...\n",
	"- a\n- b\n",
	"apiVersion: knit.dev/v1\nkind: Environment\n",
	header + "    - {name: a, type: script, script: {apply: x}}\n",
	// anchors, aliases and merge keys
	header + "    - &a {name: a, type: script, script: {apply: x}, outputs: [{name: o}]}\n    - {<<: *a, name: b, variables: [{name: v, valueFrom: a.o}]}\n",
	header + "    - {name: a, type: script, script: {apply: x}, variables: [{name: v, value: &v [*v, *v]}]}\n",
	header + "    - &c {name: a, type: script, script: {apply: x}, <<: *c}\n",
	"a: &a [x, x]\nb: &b [*a, *a]\nc: &c [*b, *b]\nspec: {components: [*c, *c]}\n",
	// deep nesting
	header + "    - {name: a, type: script, script: {apply: x}, variables: [{name: v, value: " +
		strings.Repeat("[", 70) + strings.Repeat("]", 70) + "}]}\n",
	"spec: " + strings.Repeat("{a: ", 50) + strings.Repeat("}", 50) + "\n",
	// numbers at the edges
	header + "    - {name: a, type: script, script: {apply: x}, variables: [{name: v, value: 99999999999999999999999}, {name: w, value: -.inf}, {name: x, value: 0x_1}, {name: y, value: 1e999}]}\n",
	// tabs, odd characters, several documents
	"apiVersion: knit.dev/v1\nkind: Environment\nspec:\n\tteamName: x\n",
	"apiVersion: knit.dev/v1\r\nkind: Environment\r\nspec: {teamName: \"\\u00e9\", envName: \"\\0\"}\r\n",
	header + "    - {name: a, type: script, script: {apply: x}}\n---\nkind: Environment\n---\n: [\n",
	// cycles, self references, escapes, zlocals
	header + "    - {name: a, type: script, script: {apply: x}, dependsOn: [b, a]}\n    - {name: b, type: script, script: {apply: x}, dependsOn: [a]}\n",
	header + "    - {name: a, type: terraform, module: {source: ../x, path: /y}, variablesFile: {path: ../../z}, overlayFiles: [{paths: [/etc]}]}\n",
	strings.Replace(header, "  components:", "  zlocals: [{name: z, value: \"${zlocals.z}\"}]\n  components:", 1) +
		"    - {name: a, type: script, script: {apply: \"${zlocals.z}${zlocals.nope}\"}}\n",
	"? [a, b]\n: c\n[d]: e\n",
	"apiVersion: !!binary aGVsbG8=\nkind: !custom Environment\n",
	// templates, extends and overrides
	"apiVersion: knit.dev/v1\nkind: Environment\nspec: {teamName: t, envName: e, extends: {path: ./fuzz.yaml}}\n",
	"apiVersion: knit.dev/v1\nkind: Environment\nspec: {teamName: t, envName: e, extends: {path: ./environment.yaml}, overrides: {components: [{name: web, remove: true}, {name: x}, {name: y, type: script, script: {apply: x}}, 7]}}\n",
	"apiVersion: knit.dev/v1\nkind: Environment\nspec: {teamName: t, envName: e, template: {path: /dev/zero}, parameters: [1]}\n",
	"apiVersion: knit.dev/v1\nkind: Environment\nspec: {teamName: t, envName: e, template: {path: ., git: x}, parameters: {a: {b: [c]}}}\n",
}

// FuzzParse checks that Parse survives any input: it never panics, every
// diagnostic is well formed, a nil environment always comes with an error,
// and a file it accepts is one the rest of knit can use (an acyclic graph,
// JSON-encodable values).
func FuzzParse(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add([]byte(s))
	}
	for _, pattern := range []string{cloudknitDir + "/*.yaml", "../../examples/*/environment.yaml"} {
		files, err := filepath.Glob(pattern)
		if err != nil {
			f.Fatal(err)
		}
		for _, file := range files {
			data, err := os.ReadFile(file)
			if err != nil {
				f.Fatal(err)
			}
			f.Add(data)
		}
	}
	dir, err := filepath.Abs("../../examples/webshop")
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		env, ds := Parse("fuzz.yaml", dir, data)
		checkDiagnostics(t, env, ds)
	})
}

func checkDiagnostics(t *testing.T, env *Environment, ds diag.Diagnostics) {
	t.Helper()
	if env == nil && !ds.HasErrors() {
		t.Fatalf("nil environment without an error: %v", ds)
	}
	for _, d := range ds {
		if strings.TrimSpace(d.Message) == "" {
			t.Errorf("diagnostic without a message: %+v", d)
		}
		if d.Severity != diag.Error && d.Severity != diag.Warning {
			t.Errorf("diagnostic with severity %q: %+v", d.Severity, d)
		}
		// A diagnostic may be in a file the input extends (examples/webshop).
		if d.Pos.File == "" || d.Pos.Line < 0 || d.Pos.Col < 0 || d.Pos.Col > 0 && d.Pos.Line == 0 {
			t.Errorf("diagnostic with position %+v: %+v", d.Pos, d)
		}
		_ = d.String()
	}
	if env == nil || ds.HasErrors() {
		return
	}
	// Accepted: everything downstream relies on must hold.
	if _, err := env.Graph().Levels(); err != nil {
		t.Errorf("accepted an environment whose graph fails: %v", err)
	}
	for _, c := range env.Spec.Components {
		for _, dep := range env.Dependencies(c) {
			if env.Component(dep) == nil {
				t.Errorf("accepted %s depending on missing %q", c.Name, dep)
			}
		}
	}
	if _, err := json.Marshal(env); err != nil {
		t.Errorf("accepted an environment that does not encode as JSON: %v", err)
	}
}
