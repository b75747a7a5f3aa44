package gitwatch_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"knit.dev/knit/internal/gitwatch"
	"knit.dev/knit/internal/testtools"
)

// A branch other than the watched one is fetched by name and read as its
// head's tree; its head is what Heads says; the watched branch is left alone.
func TestFetchBranchReadsAnotherBranchsHead(t *testing.T) {
	t.Parallel()
	r := newRemote(t, initialFiles)
	w := newWatcher(t, gitwatch.Config{URL: r.url, Path: "envs"})
	main := poll(t, w, "")[0].Hash
	testtools.WriteFiles(t, r.work, map[string]string{"envs/a.yaml": "name: a2\n", "envs/new.yaml": "name: n\n"})
	testtools.RunGit(t, r.work, "add", "-A")
	testtools.RunGit(t, r.work, "commit", "-q", "-m", "feature")
	head := testtools.RunGit(t, r.work, "rev-parse", "HEAD")
	testtools.RunGit(t, r.work, "push", "-q", "origin", "HEAD:refs/heads/feature/$(touch${IFS}pwned);`id`|x")

	heads, err := w.Heads(context.Background())
	if err != nil || heads["main"] != main || heads["feature/$(touch${IFS}pwned);`id`|x"] != head {
		t.Fatalf("Heads = %v, %v; want main %s and the feature at %s", heads, err, main, head)
	}
	c, err := w.FetchBranch(context.Background(), "feature/$(touch${IFS}pwned);`id`|x")
	if err != nil {
		t.Fatal(err)
	}
	if c.Hash != head || strings.Join(c.Files, ",") != "envs/a.yaml,envs/b.yaml,envs/new.yaml,envs/sub/c.yml" {
		t.Errorf("FetchBranch = %s %v, want %s with the new file", c.Hash, c.Files, head)
	}
	if got := readFile(t, filepath.Join(c.Dir, "envs/a.yaml")); got != "name: a2\n" {
		t.Errorf("the branch's tree has a.yaml %q", got)
	}
	if _, err := os.Stat(filepath.Join(r.work, "pwned")); err == nil {
		t.Error("a branch name ran a shell command")
	}
	if got := poll(t, w, main); len(got) != 0 {
		t.Errorf("the watched branch moved with another branch's fetch: %d commits", len(got))
	}
	for _, bad := range []string{"feature/../main", "-x", "a b", "refs:x", "x*"} {
		if _, err := w.FetchBranch(context.Background(), bad); !errors.Is(err, gitwatch.ErrInvalidBranch) {
			t.Errorf("FetchBranch(%q) = %v, want refused as not a valid branch name", bad, err)
		}
	}
}
