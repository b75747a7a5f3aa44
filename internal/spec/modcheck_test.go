package spec

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"knit.dev/knit/internal/diag"
)

// dbModule is a module with a required number, a typed optional map and
// an output.
const dbModule = `variable "storage_gb" {
  type = number
}

variable "replicas" {
  type    = number
  default = 1
}

variable "labels" {
  type    = map(string)
  default = {}
}

output "endpoint" { value = "db:${var.storage_gb}" }
`

// moduleEnv writes files (path → content) into a fresh environment
// folder and parses env.yaml's body (after the header) with opts.
func moduleEnv(t *testing.T, files map[string]string, body string, opts Options) (*Environment, diag.Diagnostics) {
	t.Helper()
	dir := t.TempDir()
	for name, content := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return ParseWith("env.yaml", dir, "", []byte(header+body), opts)
}

func TestModuleInputsChecked(t *testing.T) {
	_, ds := moduleEnv(t, map[string]string{"modules/db/main.tf": dbModule}, `    - name: database
      type: terraform
      module: {source: ./modules/db}
      variables:
        - {name: storage_gbs, value: 20}
        - {name: replicas, value: two}
        - name: labels
          value: {team: [a]}
`, Options{})
	wantDiags(t, ds, []string{
		"11:7 spec.components[0].variables: missing required variable \"storage_gb\" (declared at modules/db/main.tf:1 without a default)",
		"12:12 spec.components[0].variables[0].name: storage_gbs: the module declares no such variable",
		"13:28 spec.components[0].variables[1].value: replicas: \"two\" is not a valid number: a number is required",
		"15:11 spec.components[0].variables[2].value: labels: {\"team\":[\"a\"]} is not a valid map(string): element \"team\": string required, but have tuple",
	})
	wantHint(t, ds, `did you mean "storage_gb"?`)
	wantHint(t, ds, "the module declares it at modules/db/main.tf:5 with type = number")
}

func TestModuleInputsValid(t *testing.T) {
	for name, c := range map[string]struct {
		files map[string]string
		vars  string
	}{
		"all set":          {vars: "        - {name: storage_gb, value: \"20\"}\n        - {name: labels, value: {team: a, n: 1}}\n"},
		"from an upstream": {vars: "        - {name: storage_gb, valueFrom: up.size}\n"},
		"by a variables file": {
			files: map[string]string{"vars/db.tfvars": "storage_gb = 20\n"},
			vars:  "      variablesFile: {path: vars/db.tfvars}\n",
		},
		"by the module's own tfvars": {files: map[string]string{"modules/db/terraform.tfvars": "storage_gb = 20\n"}},
		"by overlay data":            {vars: "      overlayData: [{name: x.auto.tfvars.json, data: '{\"storage_gb\": 1}'}]\n"},
		// Overlay data replaces the module's main.tf: storage_gb is gone.
		"overlay data replaces a file": {vars: "      overlayData: [{name: main.tf, data: 'variable \"x\" { default = 1 }'}]\n      variables: [{name: x, value: 2}]\n"},
		// Overlay files may declare variables or set them: nothing is concluded.
		"overlay files": {
			files: map[string]string{"extra/vars.tf": `variable "more" {}`},
			vars:  "      overlayFiles: [{paths: [extra/vars.tf]}]\n      variables: [{name: more, value: 1}]\n",
		},
		// A variables file in git knit has not fetched: storage_gb may be in it.
		"unknown variables file": {vars: "      variablesFile: {source: \"https://example.com/vars.git\", path: db.tfvars}\n"},
		// A placeholder module declares nothing to check against.
		"empty module": {files: map[string]string{"modules/db/main.tf": "# later\n"}, vars: "      variables: [{name: anything, value: 1}]\n"},
	} {
		t.Run(name, func(t *testing.T) {
			files := map[string]string{"modules/db/main.tf": dbModule, "modules/up/main.tf": `output "size" { value = 1 }`}
			for k, v := range c.files {
				files[k] = v
			}
			vars := c.vars
			if strings.HasPrefix(vars, "        -") {
				vars = "      variables:\n" + vars
			}
			_, ds := moduleEnv(t, files, `    - name: up
      type: terraform
      module: {source: ./modules/up}
      outputs: [{name: size}]
    - name: database
      type: terraform
      module: {source: ./modules/db}
`+vars, Options{})
			wantDiags(t, ds, nil)
		})
	}
}

func TestValueFromCheckedAgainstModuleOutputs(t *testing.T) {
	_, ds := moduleEnv(t, map[string]string{
		"modules/db/main.tf":  dbModule,
		"modules/app/main.tf": `variable "db" { type = string }`,
	}, `    - name: database
      type: terraform
      module: {source: ./modules/db}
      variables: [{name: storage_gb, value: 1}]
      outputs: [{name: endpoints}]
    - name: app
      type: terraform
      module: {source: ./modules/app}
      variables: [{name: db, valueFrom: database.endpoints}]
`, Options{})
	wantDiags(t, ds, []string{
		`16:30 spec.components[1].variables[0].valueFrom: the module of "database" (modules/db) declares no output "endpoints"`,
	})
	wantHint(t, ds, `did you mean "endpoint"?`)
}

func TestModuleSyntaxErrorNamesTheFile(t *testing.T) {
	_, ds := moduleEnv(t, map[string]string{
		"modules/db/main.tf":  dbModule,
		"modules/db/extra.tf": "variable \"x\" {\n  type = \n}\n",
	}, `    - name: database
      type: terraform
      module: {source: ./modules/db}
      variables: [{name: nope, value: 1}]
`, Options{})
	if len(ds) != 1 || !strings.Contains(ds[0].Message, "the module cannot be parsed: modules/db/extra.tf:2: ") {
		t.Fatalf("diagnostics:\n%s", ds)
	}
	if ds[0].Field != "spec.components[0].module.source" || ds[0].Pos.Line != 10 {
		t.Errorf("at %s %s", ds[0].Pos, ds[0].Field)
	}
}

// A file in the module that links out of the environment's folder is
// reported by the containment check and never read.
func TestModuleLinkOutIsNotFollowed(t *testing.T) {
	outside := t.TempDir()
	if err := os.WriteFile(filepath.Join(outside, "vars.tf"), []byte(`variable "leaked" {}`), 0o644); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	mod := filepath.Join(dir, "modules", "db")
	if err := os.MkdirAll(mod, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(mod, "main.tf"), []byte(dbModule), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(outside, "vars.tf"), filepath.Join(mod, "vars.tf")); err != nil {
		t.Fatal(err)
	}
	_, ds := ParseWith("env.yaml", dir, "", []byte(header+`    - name: database
      type: terraform
      module: {source: ./modules/db}
      variables: [{name: leaked, value: 1}]
`), Options{})
	if len(ds) != 1 || !strings.Contains(ds[0].Message, "is a symlink to") {
		t.Errorf("want only the containment error:\n%s", ds)
	}
}

// A git module is checked once knit has fetched it: an error at a tag or
// commit, a warning at a branch (it may have moved since), nothing before.
func TestFetchedGitModule(t *testing.T) {
	repo := t.TempDir()
	if err := os.MkdirAll(filepath.Join(repo, "db"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(repo, "db", "variables.tf.json"),
		[]byte(`{"variable": {"storage_gb": {"type": "number"}}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	body := func(ref string) string {
		return `    - name: database
      type: terraform
      module: {source: "git::https://example.com/mods.git//db?ref=` + ref + `"}
      variables: [{name: storage_gb, value: lots}]
`
	}
	fetched := func(url, ref string) (string, bool, bool) {
		if url != "https://example.com/mods.git" {
			t.Errorf("asked for %s", url)
		}
		switch ref {
		case "v1":
			return repo, true, true
		case "main":
			return repo, false, true
		}
		return "", false, false
	}
	for ref, want := range map[string]string{
		"v1":   `11:38 spec.components[0].variables[0].value: storage_gb: "lots" is not a valid number: a number is required`,
		"main": `warning 11:38 spec.components[0].variables[0].value: storage_gb: "lots" is not a valid number: a number is required`,
		"v2":   "",
	} {
		_, ds := moduleEnv(t, nil, body(ref), Options{Fetched: fetched})
		var w []string
		if want != "" {
			w = []string{want}
		}
		wantDiags(t, ds, w)
	}
	_, ds := moduleEnv(t, nil, body("v1"), Options{})
	wantDiags(t, ds, nil)
}

// A value given to a sensitive variable is never shown in a diagnostic,
// and a long type constraint is shown on one line.
func TestModuleTypeMessages(t *testing.T) {
	_, ds := moduleEnv(t, map[string]string{"modules/db/main.tf": `
variable "password" {
  type      = number
  sensitive = true
}
variable "settings" {
  type = object({
    size = number
  })
}
`}, `    - name: database
      type: terraform
      module: {source: ./modules/db}
      variables:
        - {name: password, value: hunter2-secret}
        - {name: settings, value: {size: big}}
`, Options{})
	if strings.Contains(ds.String(), "hunter2") {
		t.Errorf("a sensitive value is shown:\n%s", ds)
	}
	wantDiags(t, ds, []string{
		"12:28 spec.components[0].variables[0].value: password: the value (hidden: the variable is sensitive) is not a valid number: a number is required",
		`13:28 spec.components[0].variables[1].value: settings: {"size":"big"} is not a valid object({ size = number }): .size: a number is required`,
	})
}
