package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// unitModule is a module with the variables the attack trees' units set.
const unitModule = `variable "x" {
  default = ""
}
variable "y" {
  default = ""
}
variable "token" {
  default = ""
}
`

// The import never runs what the configuration asks for: run_cmd (in
// locals and inputs), hooks and sops are not called, get_env reads none of
// the importer's variables; each is listed with its file:line, and the
// inputs built from them are left out.
func TestImportTerragruntRunsNothing(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	requireKnitTerragrunt(t)
	pwned := w.path("pwned")
	w.write(map[string]string{
		"tree/app/main.tf": unitModule,
		"tree/app/terragrunt.hcl": fmt.Sprintf(`locals {
  stamp = run_cmd("sh", "-c", "touch %[1]s-locals; echo hi")
}

terraform {
  before_hook "pwn" {
    commands = ["plan"]
    execute  = ["touch", "%[1]s-hook"]
  }
}

inputs = {
  x     = local.stamp
  y     = "kept"
  token = get_env("KNIT_TG_SECRET")
  z     = run_cmd("--terragrunt-quiet", "touch", "%[1]s-inputs")
}
`, pwned),
	})
	r := w.knitWith([]string{"KNIT_TG_SECRET=hunter2", "TG_SECRET=hunter2"}, "import", "terragrunt", "tree")
	if r.code != 0 {
		t.Fatalf("import: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	matches, _ := filepath.Glob(pwned + "*")
	if len(matches) > 0 {
		t.Fatalf("the import ran the configuration's commands: %v", matches)
	}
	for _, want := range []string{
		`app/terragrunt.hcl:2: run_cmd("sh", "-c", "touch`,
		`app/terragrunt.hcl:6: terraform.before_hook pwn: hooks run commands`,
		`app/terragrunt.hcl:15: get_env("KNIT_TG_SECRET"): reads the importer's environment`,
		`app/terragrunt.hcl:16: run_cmd("--terragrunt-quiet"`,
		`app/terragrunt.hcl:13: inputs.x: left out: its value comes from run_cmd(sh -c touch`,
		`inputs.token: left out`,
	} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("report lacks %q:\n%s", want, r.stdout)
		}
	}
	text := w.read("tree/tree.yaml")
	if strings.Contains(text, "hunter2") || strings.Contains(r.stdout+r.stderr, "hunter2") {
		t.Errorf("an environment variable of the importer's reached the output:\n%s", text)
	}
	if !strings.Contains(text, "value: kept") || strings.Contains(text, "name: x") {
		t.Errorf("tree.yaml should keep y and leave x out:\n%s", text)
	}
}

// A symlink loop in the tree does not hold the import up, nor does a
// symlink out of it lead the import outside: both are reported and not
// followed, as Terragrunt does not follow symlinked folders.
func TestImportTerragruntSymlinks(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	requireKnitTerragrunt(t)
	w.write(map[string]string{
		"tree/env/app/main.tf":          unitModule,
		"tree/env/app/terragrunt.hcl":   "inputs = { y = \"one\" }\n",
		"elsewhere/evil/main.tf":        unitModule,
		"elsewhere/evil/terragrunt.hcl": "inputs = { y = \"evil\" }\n",
	})
	for link, target := range map[string]string{"tree/env/loop": "..", "tree/env/self": ".", "tree/out": "../elsewhere", "tree/env/app2": "app"} {
		if err := os.Symlink(target, w.path(link)); err != nil {
			t.Fatal(err)
		}
	}
	r := w.ok("import", "terragrunt", "tree", "-o", "yaml")
	if strings.Count(r.stdout, "kind: Environment") != 1 || strings.Contains(r.stdout, "evil") {
		t.Errorf("want one environment, from inside the tree only:\n%s", r.stdout)
	}
	for _, want := range []string{"env/loop: symlink to ..: not followed: it loops back", "out: symlink to ../elsewhere: not followed: it leads outside", "env/app2: symlink to app: not followed"} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("report lacks %q:\n%s", want, r.stderr)
		}
	}
}

// A unit whose include (or read_terragrunt_config) names a file outside
// the folder being imported is refused, naming the call's file:line and
// the file, before that file is read (find_in_parent_folders looks no
// higher than the tree); the other units are imported.
func TestImportTerragruntIncludeOutside(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	requireKnitTerragrunt(t)
	w.write(map[string]string{
		"root.hcl":                     "inputs = { x = \"from outside\" }\n",
		"secret.hcl":                   "locals { v = \"outside\" }\n",
		"tree/env/inc/main.tf":         unitModule,
		"tree/env/inc/terragrunt.hcl":  "include \"root\" {\n  path = find_in_parent_folders(\"root.hcl\")\n}\n",
		"tree/env/read/main.tf":        unitModule,
		"tree/env/read/terragrunt.hcl": "locals {\n  s = read_terragrunt_config(\"../../../secret.hcl\")\n}\ninputs = { x = local.s.locals.v }\n",
		"tree/env/ok/main.tf":          unitModule,
		"tree/env/ok/terragrunt.hcl":   "inputs = { y = \"fine\" }\n",
	})
	r := w.ok("import", "terragrunt", "tree", "-o", "yaml")
	if strings.Contains(r.stdout, "outside") || !strings.Contains(r.stdout, "name: ok") || strings.Contains(r.stdout, "name: inc") {
		t.Errorf("want only the ok unit, nothing from outside:\n%s", r.stdout)
	}
	for _, want := range []string{
		"env/inc/terragrunt.hcl: unit: not imported", `env/inc/terragrunt.hcl:2,10-33: Error in function call; Call to function "find_in_parent_folders" failed: find_in_parent_folders("root.hcl"): no such file in the folders above env/inc/terragrunt.hcl up to the folder being imported (folders above that are not read)`,
		"env/read/terragrunt.hcl: unit: not imported", `env/read/terragrunt.hcl:2,7-30: Error in function call; Call to function "read_terragrunt_config" failed: read_terragrunt_config("../../../secret.hcl") reads `, "secret.hcl, outside the folder being imported",
	} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("report lacks %q:\n%s", want, r.stderr)
		}
	}
}

// Ten thousand units, a root include each, import in one go: the report
// counts them all, each environment validates.
func TestImportTerragruntTenThousandUnits(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	requireKnitTerragrunt(t)
	files := map[string]string{
		"big/root.hcl":          "locals {\n  owner = \"platform\"\n}\ninputs = { y = local.owner }\n",
		"big/modules/m/main.tf": unitModule,
	}
	const envs, perEnv = 4, 2500
	for e := 0; e < envs; e++ {
		for u := 0; u < perEnv; u++ {
			files[fmt.Sprintf("big/env%d/unit%04d/terragrunt.hcl", e, u)] = fmt.Sprintf("include \"root\" {\n  path = find_in_parent_folders(\"root.hcl\")\n}\nterraform {\n  source = \"../../modules/m\"\n}\ninputs = { x = \"%d-%d\" }\n", e, u)
		}
	}
	w.write(files)
	start := time.Now()
	r := w.ok("import", "terragrunt", "big", "--env-per", "1")
	t.Logf("imported %d units in %s", envs*perEnv, time.Since(start))
	for e := 0; e < envs; e++ {
		if !strings.Contains(r.stdout, fmt.Sprintf("environment big/env%d (env%d): %d components", e, e, perEnv)) {
			t.Errorf("env%d: want %d components:\n%.2000s", e, perEnv, r.stdout)
		}
	}
	w.ok("validate", "-f", "big/env3.yaml")
}
