package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestValidateReadsEveryKind runs the real binary on each kind of file a
// repository holds (issue 37 item 6): a pipeline whose prod stage has a
// typo'd field fails at that field's file:line:col with a did-you-mean,
// and passes once fixed; its template checks on its own; a folder of
// policies compiles (the shipped examples), and one with an error fails
// at the error's file:line:col; a kind knit does not read is told the
// kinds it does.
func TestValidateReadsEveryKind(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	typo := strings.Replace(webPipeline, "      file: ../stages/prod.yaml", "      fiel: ../stages/prod.yaml", 1)
	w.write(map[string]string{
		"modules/app-1/main.tf": appVersion(1),
		"templates/web.yaml":    pipelineTemplate,
		"stages/dev.yaml":       stageEnv("dev", "1", "http://127.0.0.1:1/dev"),
		"stages/staging.yaml":   stageEnv("staging", "1", "http://127.0.0.1:1/staging"),
		"stages/prod.yaml":      stageEnv("prod", "1", "http://127.0.0.1:1/prod"),
		"pipelines/web.yaml":    typo,
		"policies/bad.rego":     "package knit\n\ndeny contains msg if {\n\tinput.x == y\n\tmsg := \"x\"\n}\n",
		"other.yaml":            "apiVersion: knit.dev/v1\nkind: Pipelines\nmetadata: {name: web}\n",
	})
	git(t, w.dir, "init", "-q") // a pipeline's files live in a repository: templates resolve inside it

	r := w.knit("validate", "-f", "pipelines/web.yaml")
	want := "pipelines/web.yaml:10:7: spec.stages[2].fiel: unknown field \"fiel\"\n    hint: did you mean \"file\"?\n"
	if r.code != 1 || !strings.Contains(r.stdout, want) || r.stderr != "" {
		t.Fatalf("knit validate of a pipeline with a typo'd stage field: exit %d, want 1 and\n%s\ngot:\n%s%s", r.code, want, r.stdout, r.stderr)
	}
	w.write(map[string]string{"pipelines/web.yaml": webPipeline})
	if r := w.ok("validate", "-f", "pipelines/web.yaml"); !strings.Contains(r.stdout, "pipelines/web.yaml: valid: pipeline web of team shop, 3 stages, 0 warnings") {
		t.Errorf("knit validate of the fixed pipeline:\n%s", r.stdout)
	}
	if r := w.ok("validate", "-f", "templates/web.yaml"); !strings.Contains(r.stdout, "templates/web.yaml: valid: environment template of 1 component") {
		t.Errorf("knit validate of the template:\n%s", r.stdout)
	}

	examples, err := filepath.Abs(filepath.Join("..", "..", "policies", "examples"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(examples); err != nil {
		t.Fatal(err)
	}
	if r := w.ok("validate", "-f", examples); !strings.Contains(r.stdout, ": valid: policies, 4 files, 0 warnings") {
		t.Errorf("knit validate of the shipped policies:\n%s", r.stdout)
	}
	r = w.knit("validate", "-f", "policies")
	if want := "policies/bad.rego:4:2: var y is unsafe in rule deny\npolicies: invalid: 1 error, 0 warnings\n"; r.code != 1 || r.stdout != want {
		t.Errorf("knit validate of a policy that does not compile: exit %d, want 1 and\n%s\ngot:\n%s%s", r.code, want, r.stdout, r.stderr)
	}

	r = w.knit("validate", "-f", "other.yaml")
	if want := `hint: did you mean "Pipeline"? knit reads kind: Environment, EnvironmentTemplate, EnvironmentSet and Pipeline files`; r.code != 1 || !strings.Contains(r.stdout, want) {
		t.Errorf("knit validate of kind Pipelines: exit %d, want 1 and %s\n%s%s", r.code, want, r.stdout, r.stderr)
	}
}
