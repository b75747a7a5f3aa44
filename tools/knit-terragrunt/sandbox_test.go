package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A hostile tree: each case is a unit under tree/ whose configuration
// reaches, or tries to reach, outside/ (a sibling of the tree holding a
// secret), a file of the machine's, the importer's environment or a
// command. The import must refuse each with an error naming the file,
// line and path, read nothing outside the tree (watched with inotify) and
// put no secret in the description.
func TestHostileTree(t *testing.T) {
	const secret = "s3cr3t-outside-the-tree"
	t.Setenv("KNIT_TG_SECRET", "hunter2-from-the-env")
	cases := []struct {
		name, hcl string
		json      bool              // hcl is terragrunt.hcl.json
		extra     map[string]string // more files under tree/
		links     map[string]string // symlinks under tree/: name -> target
		want      []string          // in the unit's error ("" = no error)
	}{
		{name: "file-dotdot", hcl: `inputs = { x = file("../../outside/secret") }`,
			want: []string{"app/terragrunt.hcl:1", `file("../../outside/secret")`, "outside/secret", "outside the folder being imported"}},
		{name: "file-absolute", hcl: `inputs = { x = file("/etc/passwd") }`,
			want: []string{"app/terragrunt.hcl:1", `file("/etc/passwd")`, "outside the folder being imported"}},
		{name: "file-home", hcl: `inputs = { x = file("~/secret") }`,
			want: []string{"app/terragrunt.hcl:1", `file("~/secret")`, "outside the folder being imported"}},
		{name: "symlink-file", hcl: "locals {\n  s = file(\"link\")\n}\ninputs = { x = local.s }",
			links: map[string]string{"app/link": "../../outside/secret"},
			want:  []string{"app/terragrunt.hcl:2", `file("link")`, "outside/secret", "outside the folder being imported"}},
		{name: "symlink-folder", hcl: `inputs = { x = file("up/outside/secret") }`,
			links: map[string]string{"app/up": "../.."},
			want:  []string{"app/terragrunt.hcl:1", `file("up/outside/secret")`, "outside the folder being imported"}},
		{name: "templatefile-outside", hcl: `inputs = { x = templatefile("../../outside/secret", {}) }`,
			want: []string{"app/terragrunt.hcl:1", `templatefile("../../outside/secret"`, "outside the folder being imported"}},
		{name: "template-reads-outside", hcl: `inputs = { x = templatefile("t.tpl", {}) }`,
			extra: map[string]string{"app/t.tpl": `got ${file("../../outside/secret")}`},
			want:  []string{"app/terragrunt.hcl:1", "t.tpl:1", "outside the folder being imported"}},
		{name: "filebase64", hcl: `inputs = { x = filebase64("../../outside/secret") }`,
			want: []string{"app/terragrunt.hcl:1", "outside the folder being imported"}},
		{name: "filesha256", hcl: `inputs = { x = filesha256("../../outside/secret") }`,
			want: []string{"app/terragrunt.hcl:1", "outside the folder being imported"}},
		{name: "fileexists", hcl: `inputs = { x = fileexists("../../outside/secret") }`,
			want: []string{"app/terragrunt.hcl:1", "outside the folder being imported"}},
		{name: "fileset", hcl: `inputs = { x = fileset("../../outside", "*") }`,
			want: []string{"app/terragrunt.hcl:1", "outside the folder being imported"}},
		{name: "fileset-pattern", hcl: `inputs = { x = fileset(".", "../../outside/*") }`,
			want: []string{"app/terragrunt.hcl:1", "outside the folder being imported"}},
		{name: "read_terragrunt_config", hcl: `locals { o = read_terragrunt_config("../../outside/secret.hcl") }`,
			want: []string{"app/terragrunt.hcl:1", "outside/secret.hcl", "outside the folder being imported"}},
		{name: "read_tfvars_file", hcl: `inputs = { x = read_tfvars_file("../../outside/secret.tfvars") }`,
			want: []string{"app/terragrunt.hcl:1", "outside/secret.tfvars", "outside the folder being imported"}},
		{name: "include-path", hcl: "include \"up\" {\n  path = \"../../outside/secret.hcl\"\n}",
			want: []string{"app/terragrunt.hcl:2", "outside/secret.hcl", "outside the folder being imported"}},
		{name: "find_in_parent_folders", hcl: "include \"up\" {\n  path = find_in_parent_folders(\"outside.hcl\")\n}",
			want: []string{"app/terragrunt.hcl:2", `find_in_parent_folders("outside.hcl")`, "not read"}},
		{name: "included-file-reads-outside", hcl: "include \"root\" {\n  path = find_in_parent_folders(\"root.hcl\")\n}",
			extra: map[string]string{"root.hcl": "\ninputs = { x = file(\"../outside/secret\") }"},
			want:  []string{"root.hcl:2", `file("../outside/secret")`, "outside the folder being imported"}},
		{name: "json-unit", json: true, hcl: `{"inputs": {"x": "${file(\"../../outside/secret\")}"}}`,
			want: []string{"app/terragrunt.hcl.json:1", `file("../../outside/secret")`, "cannot tell which file calls it"}},
		{name: "json-include", json: true, hcl: `{"include": {"root": {"path": "../../outside/secret.hcl"}}}`,
			want: []string{"app/terragrunt.hcl.json", `include path "../../outside/secret.hcl"`, "outside the folder being imported"}},
		{name: "json-include-template", json: true, hcl: `{"include": {"root": {"path": "${get_terragrunt_dir()}/../../outside/secret.hcl"}}}`,
			want: []string{"app/terragrunt.hcl.json", "a plain path or one find_in_parent_folders call"}},
		{name: "json-include-find", json: true, hcl: `{"include": {"root": {"path": "${find_in_parent_folders(\"outside.hcl\")}"}}}`,
			want: []string{`find_in_parent_folders("outside.hcl")`, "folders above that are not read"}},
		{name: "spread-arguments", hcl: `inputs = { x = file(["../../outside/secret"]...) }`,
			want: []string{"app/terragrunt.hcl:1", "cannot tell which file calls it"}},
		{name: "run_cmd", hcl: `inputs = { x = run_cmd("touch", "PWNED") }`},
		{name: "get_working_dir-then-run_cmd", hcl: "locals {\n  w = get_working_dir()\n  x = run_cmd(\"touch\", \"PWNED\")\n}"},
		{name: "get_env", hcl: `inputs = { x = get_env("KNIT_TG_SECRET") }`},
		{name: "sops_decrypt_file", hcl: `inputs = { x = sops_decrypt_file("../../outside/secret") }`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			top := t.TempDir()
			t.Setenv("HOME", filepath.Join(top, "outside"))
			pwned := filepath.Join(top, "outside", "pwned")
			files := map[string]string{
				"outside/secret":        secret,
				"outside/secret.hcl":    `inputs = { x = "` + secret + `" }`,
				"outside/secret.tfvars": `x = "` + secret + `"`,
				"outside.hcl":           `inputs = { x = "` + secret + `" }`,
			}
			unitFile := "tree/app/terragrunt.hcl"
			if c.json {
				unitFile += ".json"
			}
			files[unitFile] = strings.ReplaceAll(c.hcl, "PWNED", pwned)
			for name, text := range c.extra {
				files["tree/"+name] = text
			}
			writeFiles(t, top, files)
			for name, target := range c.links {
				if err := os.Symlink(target, filepath.Join(top, "tree", name)); err != nil {
					t.Fatal(err)
				}
			}
			w := watchOpens(t, filepath.Join(top, "outside"), top)
			d, err := describeTree(filepath.Join(top, "tree"), 1)
			if err != nil {
				t.Fatal(err)
			}
			opened := w.opened()
			out, _ := json.Marshal(d)
			text := string(out)
			for _, bad := range []string{secret, "hunter2", "root:x:0:0"} {
				if strings.Contains(text, bad) {
					t.Errorf("the description holds %q:\n%s", bad, text)
				}
			}
			if len(opened) > 0 {
				t.Errorf("the import opened files outside the tree: %v", opened)
			}
			if _, err := os.Stat(pwned); err == nil {
				t.Errorf("the import ran the configuration's command")
			}
			var unit *Unit
			for i := range d.Units {
				if d.Units[i].Path == "app" {
					unit = &d.Units[i]
				}
			}
			if unit == nil {
				t.Fatalf("no unit app:\n%s", text)
			}
			if len(c.want) == 0 {
				if unit.Error != "" {
					t.Errorf("unit error: %s", unit.Error)
				}
				return
			}
			for _, want := range c.want {
				if !strings.Contains(unit.Error, want) {
					t.Errorf("the unit's error lacks %q: %q", want, unit.Error)
				}
			}
		})
	}
}

// Paths inside the tree still resolve as Terragrunt resolves them: a
// file() in an included file against that file's folder, a
// read_terragrunt_config and a find_in_parent_folders against the unit,
// a template's own file() against the template's caller, a symlink that
// stays inside the tree.
func TestInsideTreeStillReads(t *testing.T) {
	top := t.TempDir()
	writeFiles(t, top, map[string]string{
		"tree/root.hcl":           "inputs = {\n  root = trimspace(file(\"common/root.txt\"))\n  env  = read_terragrunt_config(find_in_parent_folders(\"env.hcl\")).locals.env\n}",
		"tree/common/root.txt":    "from-root\n",
		"tree/qa/env.hcl":         `locals { env = "qa" }`,
		"tree/qa/app/values.txt":  "from-unit",
		"tree/qa/app/t.tpl":       `${name}-${file("values.txt")}`,
		"tree/qa/app/vars.tfvars": `tf = "from-tfvars"`,
		"tree/qa/app/terragrunt.hcl": `include "root" {
  path = find_in_parent_folders("root.hcl")
}
inputs = {
  unit   = file("values.txt")
  linked = file("link.txt")
  tpl    = templatefile("t.tpl", { name = "t" })
  sum    = filesha256("values.txt") != ""
  exists = fileexists("nope.txt")
  set    = fileset(".", "*.txt")
  tf     = jsondecode(read_tfvars_file("vars.tfvars")).tf
}
`,
	})
	if err := os.Symlink("../../common/root.txt", filepath.Join(top, "tree/qa/app/link.txt")); err != nil {
		t.Fatal(err)
	}
	d, err := describeTree(filepath.Join(top, "tree"), 1)
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Units) != 1 || d.Units[0].Error != "" {
		t.Fatalf("units: %+v", d.Units)
	}
	in := d.Units[0].Inputs
	for name, want := range map[string]any{
		"root": "from-root", "env": "qa", "unit": "from-unit", "linked": "from-root\n",
		"tpl": "t-from-unit", "sum": true, "exists": false, "tf": "from-tfvars",
	} {
		if in[name] != want {
			t.Errorf("input %s = %#v, want %#v", name, in[name], want)
		}
	}
	if set, _ := json.Marshal(in["set"]); string(set) != `["link.txt","values.txt"]` {
		t.Errorf("input set = %s", set)
	}
}

func writeFiles(t *testing.T, top string, files map[string]string) {
	t.Helper()
	for name, text := range files {
		path := filepath.Join(top, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
