package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// terragruntFixtures are folders of Terragrunt's own test fixtures, each
// with includes and dependencies (docs/terragrunt.md lists what each
// could not translate).
var terragruntFixtures = []string{
	"include-deep",
	"include-expose",
	"include-multiple",
	"inputs-from-dependency",
	"multiinclude-dependency",
	"output-from-remote-state",
	"render-json",
}

// terragruntSource is the folder of github.com/gruntwork-io/terragrunt's
// module as knit-terragrunt's go.mod pins it, from the module cache
// (downloaded through the module proxy when missing).
func terragruntSource(t *testing.T) string {
	t.Helper()
	cmd := exec.Command("go", "mod", "download", "-json", "github.com/gruntwork-io/terragrunt")
	cmd.Dir = filepath.Join(repo, "tools", "knit-terragrunt")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go mod download github.com/gruntwork-io/terragrunt: %v", err)
	}
	var m struct{ Dir string }
	if err := json.Unmarshal(out, &m); err != nil || m.Dir == "" {
		t.Fatalf("go mod download: %v %s", err, out)
	}
	return m.Dir
}

// Terragrunt's own fixtures import: each report (what could not be
// translated, and knit validate's verdict) is the golden file's.
func TestImportTerragruntFixtures(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	requireKnitTerragrunt(t)
	// All of them: some units take modules from folders beside theirs.
	copyTree(t, filepath.Join(terragruntSource(t), "test", "fixtures"), w.path("fixtures"))
	var got strings.Builder
	for _, f := range terragruntFixtures {
		dir := filepath.Join("fixtures", filepath.FromSlash(f))
		r := w.knit("import", "terragrunt", dir, "-o", "yaml", "--out", "fixtures")
		envs := strings.Count(r.stdout, "kind: Environment")
		fmt.Fprintf(&got, "## %s: exit %d, %d environments, %d components\n\n", f, r.code, envs, strings.Count(r.stdout, "type: terraform"))
		report := strings.ReplaceAll(r.stderr, w.path(dir)+string(filepath.Separator), "")
		report = strings.ReplaceAll(report, w.path("fixtures"), "FIXTURES")
		fmt.Fprintf(&got, "```\n%s```\n\n", report)
	}
	golden := filepath.Join("testdata", "terragrunt-fixtures.golden")
	if *update {
		if err := os.WriteFile(golden, []byte(got.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run with -update to write it)", err)
	}
	if got.String() != string(want) {
		t.Errorf("reports differ from %s (run with -update after checking):\n%s", golden, got.String())
	}
}
