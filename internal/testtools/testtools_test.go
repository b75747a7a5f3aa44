package testtools

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestModuleRoot(t *testing.T) {
	root := ModuleRoot(t)
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		t.Fatalf("ModuleRoot = %s, which holds no go.mod", root)
	}
	wd, _ := os.Getwd()
	if rel, err := filepath.Rel(root, wd); err != nil || rel != filepath.Join("internal", "testtools") {
		t.Errorf("ModuleRoot = %s is not two levels above %s", root, wd)
	}
}

func TestRequired(t *testing.T) {
	t.Setenv("CI", "")
	t.Setenv("KNIT_REQUIRE_TOOLS", "")
	if Required() {
		t.Error("Required without CI or KNIT_REQUIRE_TOOLS")
	}
	t.Setenv("KNIT_REQUIRE_TOOLS", "1")
	if !Required() {
		t.Error("not Required with KNIT_REQUIRE_TOOLS=1")
	}
	t.Setenv("KNIT_REQUIRE_TOOLS", "")
	t.Setenv("CI", "true")
	if !Required() {
		t.Error("not Required with CI=true")
	}
}

func TestFilesHoldingNamesEachFileHoldingEachText(t *testing.T) {
	dir := t.TempDir()
	WriteFiles(t, dir, map[string]string{"a.txt": "a secret here", "sub/b.txt": "nothing", "sub/c.txt": "secret, and more"})
	holding, read := FilesHolding(t, dir, "secret", "absent")
	if read != 3 {
		t.Errorf("read %d files, want 3", read)
	}
	if got := strings.Join(holding["secret"], " "); got != "a.txt sub/c.txt" {
		t.Errorf("files holding the secret: %q", got)
	}
	if len(holding["absent"]) != 0 {
		t.Errorf("files holding a text no file has: %v", holding["absent"])
	}
}
