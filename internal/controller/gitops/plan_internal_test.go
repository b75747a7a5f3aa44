package gitops

import (
	"os"
	"path/filepath"
	"regexp"
	"testing"
)

func TestInvalidIDIsMadeOfThePathOnly(t *testing.T) {
	valid := regexp.MustCompile(`^git/[a-z]([-a-z0-9]*[a-z0-9])?$`)
	seen := map[string]string{}
	for _, p := range []string{"envs/evil.yaml", "envs/evil-yaml", "envs/../../../../tmp/x.yaml", "9.yaml", "envs/a very long name that goes on and on and on past sixty-three characters.yaml"} {
		id := invalidID(p)
		if !valid.MatchString(id) || len(id)-len("git/") > 63 {
			t.Errorf("invalidID(%q) = %q: not a valid environment ID", p, id)
		}
		if other, ok := seen[id]; ok {
			t.Errorf("%q and %q share the ID %s", p, other, id)
		}
		seen[id] = p
		if again := invalidID(p); again != id {
			t.Errorf("invalidID(%q) is not stable: %s, then %s", p, id, again)
		}
	}
}

func TestContentSumsSeeEveryFileOfAFolder(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) {
		t.Helper()
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("m/main.tf", "a")
	write("m/sub/x.tf", "b")
	sum := func() string {
		s, err := newContentSums().path(filepath.Join(dir, "m"))
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	before := sum()
	write("m/sub/x.tf", "c")
	if sum() == before {
		t.Error("a change in a subfolder left the folder's sum alone")
	}
	missing, err := newContentSums().path(filepath.Join(dir, "none"))
	if err != nil || missing == "" {
		t.Errorf("a missing path: %q, %v", missing, err)
	}
}
