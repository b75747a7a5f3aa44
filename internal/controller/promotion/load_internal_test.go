package promotion

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestAStageFileIsReadOnlyInsideItsTree: a stage file that is a symlink
// out of the commit's tree (to a file of the server's disk) is refused,
// naming the link; one inside is read.
func TestAStageFileIsReadOnlyInsideItsTree(t *testing.T) {
	tree, outside := t.TempDir(), t.TempDir()
	secret := filepath.Join(outside, "other.yaml")
	if err := os.WriteFile(secret, []byte("kind: Environment\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(tree, "stages"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(secret, filepath.Join(tree, "stages", "prod.yaml")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(tree, "stages", "dev.yaml"), []byte("dev\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if b, err := readInTree(tree, "stages/prod.yaml"); err == nil || !strings.Contains(err.Error(), "stages/prod.yaml") {
		t.Errorf("a link out of the tree: %q, %v; want it refused", b, err)
	}
	if b, err := readInTree(tree, "stages/dev.yaml"); err != nil || string(b) != "dev\n" {
		t.Errorf("a file inside the tree: %q, %v", b, err)
	}
}
