package promotion

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestAFleetEnvironmentsFileIsTheOneThatDeclaresIt: the scan finds each
// environment's own file by its teamName and envName, never follows a
// symlink out of the tree, and names an environment two files declare.
func TestAFleetEnvironmentsFileIsTheOneThatDeclaresIt(t *testing.T) {
	dir, outside := t.TempDir(), t.TempDir()
	env := func(name string) string {
		return "apiVersion: knit.dev/v1\nkind: Environment\nspec: {teamName: shop, envName: " + name + "}\n"
	}
	files := map[string]string{
		"fleet/f01.yaml":     env("f01"),
		"fleet/eu/f02.yml":   env("f02"),
		"fleet/twice-a.yaml": env("f03"),
		"fleet/twice-b.yaml": env("f03"),
		"templates/t.yaml":   "kind: EnvironmentTemplate\n",
		"notes.yaml":         "{{ not yaml",
		".git/x.yaml":        env("git"),
	}
	for p, data := range files {
		full := filepath.Join(dir, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(outside, "f09.yaml"), []byte(env("f09")), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(outside, "f09.yaml"), filepath.Join(dir, "fleet", "f09.yaml")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(dir, "linked")); err != nil {
		t.Fatal(err)
	}
	c := &fleetStages{}
	for id, want := range map[string]string{"shop/f01": "fleet/f01.yaml", "shop/f02": "fleet/eu/f02.yml"} {
		if got, err := c.envFile(dir, "c1", id); err != nil || got != want {
			t.Errorf("%s: %q, %v; want %s", id, got, err, want)
		}
	}
	for id, want := range map[string]string{"shop/f03": "two files", "shop/f09": "no file", "shop/git": "no file"} {
		if _, err := c.envFile(dir, "c1", id); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", id, err, want)
		}
	}
}
