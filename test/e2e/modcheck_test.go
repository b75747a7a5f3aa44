package e2e

import (
	"fmt"
	"os"
	"strings"
	"testing"
)

// sizedModule declares a required number, an optional one and an output.
const sizedModule = `
variable "storage_gb" { type = number }
variable "replicas" {
  type    = number
  default = 1
}
resource "terraform_data" "db" { input = var.storage_gb * var.replicas }
output "endpoint" { value = "db-${terraform_data.db.id}" }
`

// noToolRan fails t if the counting wrapper saw any tool process, even
// `version`.
func (w *world) noToolRan(what string) {
	w.t.Helper()
	if data, err := os.ReadFile(w.path("calls.log")); err == nil && len(data) > 0 {
		w.t.Errorf("%s ran the tool:\n%s", what, data)
	}
}

// TestValidateKnowsTheModule: knit validate (and plan/apply, which
// validate first) read the module's variable and output blocks and report
// an undeclared input, a missing required variable, a value of the wrong
// type and a valueFrom the producer's module has no output for, each at
// its line in the environment file, without starting the tool.
func TestValidateKnowsTheModule(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	w.countingTofu()
	w.write(map[string]string{
		"modules/db/main.tf":  sizedModule,
		"modules/app/main.tf": "variable \"db\" { type = string }\nresource \"terraform_data\" \"app\" { input = var.db }\n",
	})
	w.writeEnv(envFile("mod", `    - name: database
      type: terraform
      module: {source: ./modules/db}
      variables:
        - {name: storage_gbs, value: 20}
        - {name: replicas, value: two}
      outputs: [{name: endpoints}]
    - name: app
      type: terraform
      module: {source: ./modules/app}
      variables:
        - {name: db, valueFrom: database.endpoints}
`))
	want := []string{
		`env.yaml:12:7: spec.components[0].variables: missing required variable "storage_gb" (declared at modules/db/main.tf:2 without a default)`,
		`env.yaml:13:12: spec.components[0].variables[0].name: storage_gbs: the module declares no such variable`,
		`    hint: did you mean "storage_gb"?`,
		`env.yaml:14:28: spec.components[0].variables[1].value: replicas: "two" is not a valid number: a number is required`,
		`env.yaml:20:22: spec.components[1].variables[0].valueFrom: the module of "database" (modules/db) declares no output "endpoints"`,
		`    hint: did you mean "endpoint"?`,
		`env.yaml: invalid: 4 errors, 0 warnings`,
	}
	r := w.knit("validate", "-f", "env.yaml")
	if r.code != 1 {
		t.Fatalf("validate exit %d, want 1\n%s%s", r.code, r.stdout, r.stderr)
	}
	for _, line := range want {
		if !strings.Contains(r.stdout, line+"\n") {
			t.Errorf("validate output lacks %q:\n%s", line, r.stdout)
		}
	}
	if r := w.knit("apply", "-f", "env.yaml"); r.code == 0 || !strings.Contains(r.stderr, want[0]) {
		t.Errorf("apply exit %d, want refused with the same errors:\n%s", r.code, r.stderr)
	}
	w.noToolRan("validate and the refused apply")

	// Fixed, the same file applies: nothing above was a false alarm.
	w.writeEnv(envFile("mod", `    - name: database
      type: terraform
      module: {source: ./modules/db}
      variables:
        - {name: storage_gb, value: 20}
        - {name: replicas, value: "2"}
      outputs: [{name: endpoint}]
    - name: app
      type: terraform
      module: {source: ./modules/app}
      variables:
        - {name: db, valueFrom: database.endpoint}
`))
	if r := w.knit("validate", "-f", "env.yaml"); r.code != 0 {
		t.Fatalf("validate of the fixed file: exit %d\n%s", r.code, r.stdout)
	}
	w.noToolRan("validate")
	w.ok("apply", "-f", "env.yaml")
}

// TestValidateChecksGitModuleOnceFetched: a git module is not checked
// before knit first fetches it (validation never fetches), and is checked
// from the fetched copy afterwards, still without the tool or git.
func TestValidateChecksGitModuleOnceFetched(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	src := w.path("src/mod")
	w.write(map[string]string{"src/mod/db/main.tf": sizedModule})
	git(t, src, "init", "-q", "-b", "main")
	git(t, src, "add", ".")
	git(t, src, "commit", "-q", "-m", "v1")
	git(t, src, "tag", "v1")
	git(t, w.dir, "clone", "-q", "--bare", src, w.path("mod.git"))
	env := func(vars string) string {
		return envFile("remote", fmt.Sprintf(`    - name: database
      type: terraform
      module: {source: "git::file://%s//db?ref=v1"}
      variables:
%s`, w.path("mod.git"), vars))
	}
	bad := env("        - {name: storage_gb, value: lots}\n")
	w.writeEnv(bad)
	if r := w.knit("validate", "-f", "env.yaml"); r.code != 0 {
		t.Fatalf("before the first fetch the module cannot be known; validate said:\n%s", r.stdout)
	}

	w.writeEnv(env("        - {name: storage_gb, value: 5}\n"))
	w.ok("apply", "-f", "env.yaml")

	w.writeEnv(bad)
	w.countingTofu()
	// No git either: a PATH without it would fail a fetch.
	r := w.knitWith([]string{"PATH=/nonexistent"}, "validate", "-f", "env.yaml")
	line := `env.yaml:13:30: spec.components[0].variables[0].value: storage_gb: "lots" is not a valid number: a number is required`
	if r.code != 1 || !strings.Contains(r.stdout, line) {
		t.Errorf("validate after the fetch: exit %d, want 1 with\n%s\ngot:\n%s%s", r.code, line, r.stdout, r.stderr)
	}
	if !strings.Contains(r.stdout, "mod.git//db/main.tf:2") {
		t.Errorf("the hint should name the module's file in the repository:\n%s", r.stdout)
	}
	w.noToolRan("validate")
}

// TestGitOpsCommitCheckedAgainstTheModule: the server validates each
// commit as the CLI does: a commit giving the module an input it does not
// declare is recorded invalid with the file:line error and applies nothing.
func TestGitOpsCommitCheckedAgainstTheModule(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	files := w.path("files")
	good := gitEnv("mod", files, "v1", "", false)
	repo := newGitRepo(t, map[string]string{"envs/modules/file/main.tf": fileModule, "envs/mod.yaml": good})
	s := w.startServer(gitServerArgs(repo)...)
	s.eventually("mod applied", func() bool { e, _ := s.env("shop/mod"); return e.Status == "provisioned" })

	bad := strings.Replace(strings.ReplaceAll(good, `value: "v1"`, `value: "v2"`), "{name: content,", "{name: contents,", 1)
	hash := repo.commit("typo", map[string]string{"envs/mod.yaml": bad})
	s.logged("the typo commit seen", committed(hash))
	const msg = `envs/mod.yaml:14:12: spec.components[0].variables[1].name: contents: the module declares no such variable`
	s.eventually("the commit recorded invalid, naming the line", func() bool {
		return strings.Contains(s.invalidErrors("shop/mod", "envs/mod.yaml"), msg)
	})
	if got := w.read("files/mod-web.txt"); got != "v1" {
		t.Errorf("mod-web.txt = %q: the invalid commit was applied", got)
	}
}
