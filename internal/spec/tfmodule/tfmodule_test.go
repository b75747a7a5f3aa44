package tfmodule

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"testing/fstest"
	"time"
)

func TestReadDeclarations(t *testing.T) {
	fsys := fstest.MapFS{
		"m/variables.tf": {Data: []byte(`
variable "storage_gb" { type = number }
variable "labels" {
  type    = map(string)
  default = {}
}
variable "opt" {
  type = object({ a = string, b = optional(number) })
  default = null
}
variable "anything" {}
`)},
		"m/outputs.tf.json":      {Data: []byte(`{"output": {"endpoint": {"value": "x"}}, "variable": {"count_json": {"type": "number"}}}`)},
		"m/main.tf":              {Data: []byte(`variable "hidden" {}`)},
		"m/main.tofu":            {Data: []byte(`variable "shown" { default = 1 }`)},
		"m/defaults_override.tf": {Data: []byte(`variable "storage_gb" { default = 10 }` + "\n" + `variable "nobody" {}`)},
		"m/.hidden.tf":           {Data: []byte(`variable "dot" {}`)},
		"m/terraform.tfvars":     {Data: []byte(`anything = 1`)},
		"m/x.auto.tfvars.json":   {Data: []byte(`{"labels": {}}`)},
	}
	m, err := Read(fsys, "m", "modules/m")
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(m.VariableNames(), ","); got != "anything,count_json,labels,opt,shown,storage_gb" {
		t.Errorf("variables = %s", got)
	}
	if got := strings.Join(m.OutputNames(), ","); got != "endpoint" {
		t.Errorf("outputs = %s", got)
	}
	if m.Incomplete || len(m.Problems) > 0 {
		t.Errorf("problems: %v", m.Problems)
	}
	sg := m.Variables["storage_gb"]
	if sg.Required || sg.Pos.String() != "modules/m/variables.tf:2" || sg.TypeSrc != "number" {
		t.Errorf("storage_gb = %+v (the override gives it a default)", sg)
	}
	if !m.Variables["anything"].Required || m.Variables["opt"].Required {
		t.Error("required: a block without default is required, one with default = null is not")
	}
	for _, c := range []struct {
		name  string
		value any
		bad   string
	}{
		{"storage_gb", "two", "a number is required"},
		{"storage_gb", "3", ""},
		{"storage_gb", 3, ""},
		{"count_json", true, "number required"},
		{"labels", map[string]any{"team": "x", "n": 1}, ""},
		{"labels", map[string]any{"team": []any{"x"}}, `element "team": string required`},
		{"labels", "x", "map of string required"},
		{"opt", map[string]any{"a": "x"}, ""},
		{"opt", map[string]any{"b": 1}, `attribute "a" is required`},
		{"anything", []any{1, "x"}, ""},
		{"storage_gb", nil, ""},
	} {
		err := m.Variables[c.name].Check(c.value)
		switch {
		case c.bad == "" && err != nil:
			t.Errorf("%s = %v: %v", c.name, c.value, err)
		case c.bad != "" && (err == nil || !strings.Contains(err.Error(), c.bad)):
			t.Errorf("%s = %v: error %v, want %q", c.name, c.value, err, c.bad)
		}
	}
	names, err := m.AutoTfvarsNames(fsys, "m", "modules/m")
	if err != nil || strings.Join(names, ",") != "anything,labels" {
		t.Errorf("auto tfvars set %v, %v", names, err)
	}
}

func TestSyntaxErrorNamesFileAndLine(t *testing.T) {
	m := Parse("modules/db/main.tf", []byte("variable \"a\" {}\n\nvariable \"b\" {\n  type = \n}\n"))
	if !m.Incomplete || len(m.Problems) != 1 {
		t.Fatalf("module = %+v", m)
	}
	if p := m.Problems[0].String(); !strings.HasPrefix(p, "modules/db/main.tf:4: ") {
		t.Errorf("problem = %q", p)
	}
	if _, err := TfvarsNames("x.tfvars", []byte("a = \n")); err == nil || !strings.HasPrefix(err.Error(), "x.tfvars:") {
		t.Errorf("tfvars error = %v", err)
	}
}

// A link in the module that leads out of the root is not followed: the
// module is marked incomplete, and the file's content never read.
func TestSymlinkOutOfRootNotFollowed(t *testing.T) {
	outside := t.TempDir()
	if err := os.WriteFile(filepath.Join(outside, "secret.tf"), []byte(`variable "leaked" {}`), 0o644); err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	mod := filepath.Join(root, "m")
	if err := os.MkdirAll(mod, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(outside, "secret.tf"), filepath.Join(mod, "secret.tf")); err != nil {
		t.Fatal(err)
	}
	r, err := os.OpenRoot(root)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	m, err := Read(r.FS(), "m", "m")
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := m.Variables["leaked"]; ok || !m.Incomplete {
		t.Errorf("a link out of the root was followed: %+v", m)
	}
}

func FuzzParse(f *testing.F) {
	for _, s := range []string{
		`variable "a" { type = number }`,
		`variable "a" { type = object({x = optional(string, "d")}) default = {} }`,
		`{"variable": {"a": {"type": "list(string)"}}}`,
		"variable \"a\" {\n", `output "o" { value = 1 }`, `variable "a" { type = "string" }`,
	} {
		f.Add("main.tf", []byte(s))
		f.Add("main.tf.json", []byte(s))
	}
	f.Fuzz(func(t *testing.T, name string, data []byte) {
		m := Parse(name, data)
		for _, v := range m.Variables {
			_ = v.Check(map[string]any{"a": []any{1, "x", nil}})
		}
		_, _ = TfvarsNames(name, data)
	})
}

// Overlay data replaces the module's file of the same name, and a .tofu
// file hides the .tf file of the same name, wherever each comes from.
func TestExtraFilesReplaceTheModules(t *testing.T) {
	fsys := fstest.MapFS{
		"main.tf":  {Data: []byte(`variable "old" {}`)},
		"other.tf": {Data: []byte(`variable "kept" {}`)},
	}
	m, err := Read(fsys, ".", "m",
		Extra{Name: "main.tf", Data: []byte(`variable "new" {}`)},
		Extra{Name: "other.tofu", Data: []byte(`variable "tofu" {}`)})
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(m.VariableNames(), ","); got != "new,tofu" {
		t.Errorf("variables = %s, want new,tofu", got)
	}
}

// A named pipe in the module is not opened (the open would block until
// someone writes to it): the module is incomplete, and Read returns.
func TestNamedPipeIsNotOpened(t *testing.T) {
	dir := t.TempDir()
	if err := syscall.Mkfifo(filepath.Join(dir, "pipe.tf"), 0o644); err != nil {
		t.Fatal("make a named pipe:", err) // every Unix can; no tool to install
	}
	done := make(chan *Module, 1)
	go func() {
		m, _ := Read(os.DirFS(dir), ".", "m")
		done <- m
	}()
	select {
	case m := <-done:
		if m == nil || !m.Incomplete {
			t.Errorf("module = %+v, want incomplete", m)
		}
	case <-time.After(2 * time.Minute): // a failure guard, not a timing assertion
		t.Fatal("Read blocked on a named pipe")
	}
}

// Only a string, or a variable of no type, takes a placeholder: a number,
// bool or collection could decide how many resources the module declares.
func TestPlaceholderOnlyForAString(t *testing.T) {
	m := Parse("main.tf", []byte(`
variable "s" { type = string }
variable "a" {}
variable "y" { type = any }
variable "n" { type = number }
variable "b" { type = bool }
variable "l" { type = list(string) }
variable "o" { type = object({ id = string }) }
`))
	for name, want := range map[string]bool{"s": true, "a": true, "y": true, "n": false, "b": false, "l": false, "o": false} {
		v, ok := m.Variables[name].Placeholder("p")
		if ok != want || (ok && v != "p") {
			t.Errorf("%s: Placeholder = %v, %v; want ok %v", name, v, ok, want)
		}
	}
}
