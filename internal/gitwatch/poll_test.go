package gitwatch_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"knit.dev/knit/internal/gitwatch"
	"knit.dev/knit/internal/testtools"
)

func TestFirstPollListsEveryEnvironmentFile(t *testing.T) {
	t.Parallel()
	r := newRemote(t, initialFiles)
	w := newWatcher(t, gitwatch.Config{URL: r.url, Path: "envs/"})
	commits := poll(t, w, "")
	if len(commits) != 1 {
		t.Fatalf("first poll returned %d commits, want 1", len(commits))
	}
	c := commits[0]
	if head := testtools.RunGit(t, r.work, "rev-parse", "HEAD"); c.Hash != head || c.Reset {
		t.Errorf("first poll: hash %s reset %v, want head %s, no reset", c.Hash, c.Reset, head)
	}
	// other/x.yaml is outside Path and notes.txt is not YAML.
	if got, want := summary(c.Changes), "envs/a.yaml=name: a; envs/b.yaml=name: b; envs/sub/c.yml=name: c"; got != want {
		t.Errorf("changes:\n got %s\nwant %s", got, want)
	}
	if got := readFile(t, filepath.Join(c.Dir, "modules/net/main.tf")); got != "# v1\n" {
		t.Errorf("Dir's module = %q", got)
	}
	if again := poll(t, w, c.Hash); len(again) != 0 {
		t.Errorf("a poll with nothing new returned %d commits", len(again))
	}
}

func TestCommitChangesAuthorAndMessage(t *testing.T) {
	t.Parallel()
	r := newRemote(t, initialFiles)
	w := newWatcher(t, gitwatch.Config{URL: r.url, Path: "envs"})
	first := poll(t, w, "")[0]
	hash := r.commit("Scale a, add d, drop b\n\nBecause.", map[string]string{
		"envs/a.yaml":         "name: a\nreplicas: 2\n",
		"envs/new/d.yaml":     "name: d\n",
		"envs/b.yaml":         "",
		"other/x.yaml":        "name: still outside\n",
		"modules/net/main.tf": "# v2\n",
	})
	commits := poll(t, w, first.Hash)
	if len(commits) != 1 {
		t.Fatalf("got %d commits, want 1", len(commits))
	}
	c := commits[0]
	if got, want := summary(c.Changes), "envs/a.yaml=name: a\nreplicas: 2; envs/b.yaml removed; envs/new/d.yaml=name: d"; got != want {
		t.Errorf("changes:\n got %s\nwant %s", got, want)
	}
	// Files is the whole tree's environment files, changed or not.
	if got, want := strings.Join(c.Files, " "), "envs/a.yaml envs/new/d.yaml envs/sub/c.yml"; got != want {
		t.Errorf("files = %s, want %s", got, want)
	}
	if c.Hash != hash || c.Author != "Ada Lovelace" || c.AuthorEmail != "ada@example.com" ||
		c.Message != "Scale a, add d, drop b\n\nBecause." || c.Time.IsZero() || c.Reset {
		t.Errorf("commit = %+v", c)
	}
}

func TestCommitsBetweenPollsComeBackOldestFirst(t *testing.T) {
	t.Parallel()
	r := newRemote(t, initialFiles)
	w := newWatcher(t, gitwatch.Config{URL: r.url, Path: "envs"})
	first := poll(t, w, "")[0]
	h1 := r.commit("one", map[string]string{"envs/a.yaml": "name: a1\n", "modules/net/main.tf": "# v2\n"})
	h2 := r.commit("two", map[string]string{"envs/a.yaml": "name: a2\n", "modules/net/main.tf": "# v3\n"})
	h3 := r.commit("modules only", map[string]string{"modules/net/main.tf": "# v4\n"})
	commits := poll(t, w, first.Hash)
	if len(commits) != 3 {
		t.Fatalf("got %d commits, want 3", len(commits))
	}
	for i, want := range []struct{ hash, msg, changes, module string }{
		{h1, "one", "envs/a.yaml=name: a1", "# v2\n"},
		{h2, "two", "envs/a.yaml=name: a2", "# v3\n"},
		{h3, "modules only", "", "# v4\n"},
	} {
		c := commits[i]
		if c.Hash != want.hash || c.Message != want.msg || summary(c.Changes) != want.changes {
			t.Errorf("commit %d = %s %q [%s], want %s %q [%s]", i, c.Hash, c.Message, summary(c.Changes), want.hash, want.msg, want.changes)
		}
		// Each Dir is that commit's tree: an older commit keeps older modules.
		if got := readFile(t, filepath.Join(c.Dir, "modules/net/main.tf")); got != want.module {
			t.Errorf("commit %d: Dir's module = %q, want %q", i, got, want.module)
		}
	}
}

func TestForcePushResets(t *testing.T) {
	t.Parallel()
	r := newRemote(t, initialFiles)
	w := newWatcher(t, gitwatch.Config{URL: r.url, Path: "envs"})
	first := poll(t, w, "")[0]
	gone := r.commit("soon rewritten", map[string]string{"envs/z.yaml": "name: z\n"})
	if got := poll(t, w, first.Hash); len(got) != 1 || got[0].Hash != gone {
		t.Fatalf("poll before the force-push = %+v", got)
	}
	testtools.RunGit(t, r.work, "reset", "-q", "--hard", first.Hash)
	head := r.commit("rewritten", map[string]string{"envs/a.yaml": "name: a-rewritten\n"})

	commits := poll(t, w, gone)
	if len(commits) != 1 || commits[0].Hash != head || !commits[0].Reset {
		t.Fatalf("after force-push: %+v, want one reset commit %s", commits, head)
	}
	// Every file is listed, and z.yaml, which only the lost commit had, is removed.
	want := "envs/a.yaml=name: a-rewritten; envs/b.yaml=name: b; envs/sub/c.yml=name: c; envs/z.yaml removed"
	if got := summary(commits[0].Changes); got != want {
		t.Errorf("changes:\n got %s\nwant %s", got, want)
	}
	// A commit the mirror never saw is treated the same way.
	unknown := poll(t, newWatcher(t, gitwatch.Config{URL: r.url, Path: "envs"}), gone)
	if len(unknown) != 1 || !unknown[0].Reset || len(unknown[0].Changes) != 3 {
		t.Errorf("after an unknown commit: %+v", unknown)
	}
}

func TestMergeWhoseFirstParentIsAnotherBranch(t *testing.T) {
	t.Parallel()
	r := newRemote(t, initialFiles)
	w := newWatcher(t, gitwatch.Config{URL: r.url, Path: "envs"})
	base := poll(t, w, "")[0].Hash
	seen := r.commit("on main", map[string]string{"envs/b.yaml": "name: b2\n"})
	// A feature branch from base merges main in, and main is fast-forwarded
	// to that merge: seen is now a second parent.
	testtools.RunGit(t, r.work, "checkout", "-q", "-b", "feature", base)
	r.commit("feature", map[string]string{"envs/a.yaml": "name: a-feature\n"})
	testtools.RunGit(t, r.work, "-c", "user.name=t", "-c", "user.email=t@t", "merge", "-q", "--no-edit", "main")
	testtools.RunGit(t, r.work, "push", "-q", "origin", "HEAD:main")
	merge := testtools.RunGit(t, r.work, "rev-parse", "HEAD")

	commits := poll(t, w, seen)
	if len(commits) != 1 || commits[0].Hash != merge || commits[0].Reset {
		t.Fatalf("got %+v, want the merge alone", commits)
	}
	if got, want := summary(commits[0].Changes), "envs/a.yaml=name: a-feature"; got != want {
		t.Errorf("changes since %s: %s, want %s", seen, got, want)
	}
}

func TestRootPathWatchesEveryYAMLFile(t *testing.T) {
	t.Parallel()
	r := newRemote(t, map[string]string{"a.yaml": "a\n", "deep/b.yml": "b\n", "c.json": "{}"})
	w := newWatcher(t, gitwatch.Config{URL: r.url})
	if got, want := summary(poll(t, w, "")[0].Changes), "a.yaml=a; deep/b.yml=b"; got != want {
		t.Errorf("changes = %s, want %s", got, want)
	}
}

func TestTreesArePrunedAndCheckoutRestoresThem(t *testing.T) {
	t.Parallel()
	r := newRemote(t, initialFiles)
	cache := t.TempDir()
	w := newWatcher(t, gitwatch.Config{URL: r.url, Path: "envs", CacheDir: cache, KeepTrees: 2})
	after := poll(t, w, "")[0]
	var all []gitwatch.Commit
	for _, v := range []string{"2", "3", "4"} {
		r.commit("v"+v, map[string]string{"modules/net/main.tf": "# v" + v + "\n"})
		got := poll(t, w, after.Hash)
		all = append(all, got...)
		after = got[0]
	}
	trees, err := os.ReadDir(filepath.Join(cache, "trees"))
	if err != nil {
		t.Fatal(err)
	}
	if len(trees) != 2 {
		t.Errorf("%d trees on disk, want KeepTrees = 2", len(trees))
	}
	if _, err := os.Stat(all[0].Dir); !os.IsNotExist(err) {
		t.Errorf("the oldest tree %s was kept (err %v)", all[0].Dir, err)
	}
	dir, err := w.Checkout(context.Background(), all[0].Hash)
	if err != nil {
		t.Fatal(err)
	}
	if got := readFile(t, filepath.Join(dir, "modules/net/main.tf")); got != "# v2\n" {
		t.Errorf("restored tree's module = %q", got)
	}
	// An environment's folder inside a pruned tree is written again too:
	// relative paths resolve from the file's folder, not the root.
	if err := os.RemoveAll(all[1].Dir); err != nil {
		t.Fatal(err)
	}
	if err := w.Restore(context.Background(), filepath.Join(all[1].Dir, "envs", "sub")); err != nil {
		t.Fatal(err)
	}
	if got := readFile(t, filepath.Join(all[1].Dir, "envs/sub/c.yml")); got != "name: c\n" {
		t.Errorf("restored env folder's file = %q", got)
	}
	if err := w.Restore(context.Background(), t.TempDir()); err != nil {
		t.Errorf("a folder outside the trees is not the watcher's to restore: %v", err)
	}
}

func TestConcurrentPollsAreSerialised(t *testing.T) {
	t.Parallel()
	r := newRemote(t, initialFiles)
	w := newWatcher(t, gitwatch.Config{URL: r.url, Path: "envs"})
	var wg sync.WaitGroup
	errs := make([]error, 4)
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[i] = w.Poll(context.Background(), "")
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
}

func TestHead(t *testing.T) {
	t.Parallel()
	r := newRemote(t, initialFiles)
	w := newWatcher(t, gitwatch.Config{URL: r.url})
	head, err := w.Head(context.Background())
	if want := testtools.RunGit(t, r.work, "rev-parse", "HEAD"); err != nil || head != want {
		t.Fatalf("Head = %s, %v; want %s", head, err, want)
	}
	next := r.commit("next", map[string]string{"a.yaml": "a"})
	if head, err = w.Head(context.Background()); err != nil || head != next {
		t.Errorf("Head after a push = %s, %v; want %s", head, err, next)
	}
}

func TestBranchesListsTheRemotesBranches(t *testing.T) {
	t.Parallel()
	r := newRemote(t, initialFiles)
	w := newWatcher(t, gitwatch.Config{URL: r.url, Path: "envs"})
	got, err := w.Branches(context.Background())
	if err != nil || strings.Join(got, ",") != "main" {
		t.Fatalf("Branches = %v, %v; want main", got, err)
	}
	testtools.RunGit(t, r.work, "push", "-q", "origin", "HEAD:refs/heads/feature/a", "HEAD:refs/heads/fix/b")
	if got, err = w.Branches(context.Background()); err != nil || strings.Join(got, ",") != "feature/a,fix/b,main" {
		t.Fatalf("Branches after a push = %v, %v", got, err)
	}
	testtools.RunGit(t, r.work, "push", "-q", "origin", "--delete", "feature/a")
	if got, err = w.Branches(context.Background()); err != nil || strings.Join(got, ",") != "fix/b,main" {
		t.Fatalf("Branches after a delete = %v, %v", got, err)
	}
}

// TestBlobsNameEachFileByItsContent: the same content is the same blob at
// any path and commit; a change is another.
func TestBlobsNameEachFileByItsContent(t *testing.T) {
	r := newRemote(t, map[string]string{"envs/a.yaml": "one\n", "envs/b.yaml": "one\n", "envs/c.yaml": "two\n", "README.md": "x\n"})
	w := newWatcher(t, gitwatch.Config{URL: r.url, Path: "envs"})
	first := poll(t, w, "")[0]
	if len(first.Blobs) != 3 || first.Blobs["envs/a.yaml"] == "" || first.Blobs["envs/a.yaml"] != first.Blobs["envs/b.yaml"] ||
		first.Blobs["envs/a.yaml"] == first.Blobs["envs/c.yaml"] {
		t.Fatalf("blobs of the first commit %v", first.Blobs)
	}
	r.commit("change a", map[string]string{"envs/a.yaml": "three\n"})
	next := poll(t, w, first.Hash)[0]
	if next.Blobs["envs/a.yaml"] == first.Blobs["envs/a.yaml"] || next.Blobs["envs/b.yaml"] != first.Blobs["envs/b.yaml"] {
		t.Errorf("blobs after a change of a: %v, before %v", next.Blobs, first.Blobs)
	}
}
