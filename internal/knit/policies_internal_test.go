package knit

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"knit.dev/knit/internal/engine"
	"knit.dev/knit/internal/spec"
	"knit.dev/knit/internal/store/sqlite"
)

// A commit's policies/ folder is read from the commit only: a policies/
// that is a link out of the tree (to a folder of the server's), or that
// holds one, makes a Judge that fails every run closed, naming the link.
func TestACommitsPoliciesAreNotReadThroughALinkOutOfIt(t *testing.T) {
	outside := t.TempDir()
	if err := os.WriteFile(filepath.Join(outside, "p.rego"), []byte("package knit\n\nwarn contains \"x\" if true\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	st, err := sqlite.Open(context.Background(), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	k := &Knit{store: st}
	for name, layout := range map[string]func(tree string) error{
		"folder link": func(tree string) error { return os.Symlink(outside, filepath.Join(tree, "policies")) },
		"file link": func(tree string) error {
			if err := os.Mkdir(filepath.Join(tree, "policies"), 0o755); err != nil {
				return err
			}
			return os.Symlink(filepath.Join(outside, "p.rego"), filepath.Join(tree, "policies", "p.rego"))
		},
	} {
		t.Run(name, func(t *testing.T) {
			tree := t.TempDir()
			if err := layout(tree); err != nil {
				t.Fatal(err)
			}
			checkClosed := func(what string) {
				t.Helper()
				j, err := k.judge(context.Background(), &spec.Environment{}, RunRequest{Tree: tree})
				if err != nil {
					t.Fatal(err)
				}
				c, ok := j.(engine.Checker)
				if !ok {
					t.Fatalf("%s: judge = %T, want one that fails every run closed", what, j)
				}
				if err := c.Check(); err == nil || !strings.Contains(err.Error(), "policies") || !strings.Contains(err.Error(), "outside") {
					t.Fatalf("%s: Check = %v, want the link out of the tree named", what, err)
				}
			}
			checkClosed("the run's tree")
			// The same tree as the repository's recorded policy set.
			kv, err := RepoPolicySettings("c0ffee", tree)
			if err != nil {
				t.Fatal(err)
			}
			if err := st.SetSettings(context.Background(), kv); err != nil {
				t.Fatal(err)
			}
			checkClosed("the recorded set")
			if err := st.SetSettings(context.Background(), map[string]string{SettingRepoPolicies: ""}); err != nil {
				t.Fatal(err)
			}
		})
	}
}
