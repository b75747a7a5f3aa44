package gitsource_test

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"knit.dev/knit/internal/gitsource"
	"knit.dev/knit/internal/testtools"
)

// repo is a bare repository with history:
//
//	main:    c1 (v1: version.txt=1) → c2 (version.txt=2)
//	feature: c1 → cf (version.txt=feature, extra/vars.tfvars)
type repo struct {
	work, bare, url  string
	c1, c2, cfeature string
}

func newRepo(t *testing.T) *repo {
	t.Helper()
	root := t.TempDir()
	r := &repo{work: filepath.Join(root, "work"), bare: filepath.Join(root, "repo.git")}
	testtools.RunGit(t, root, "init", "-q", "work")
	commit := func(files map[string]string, msg string) string {
		testtools.WriteFiles(t, r.work, files)
		testtools.RunGit(t, r.work, "add", "-A")
		testtools.RunGit(t, r.work, "commit", "-q", "-m", msg)
		return testtools.RunGit(t, r.work, "rev-parse", "HEAD")
	}
	r.c1 = commit(map[string]string{"version.txt": "1", "dir/a.txt": "a"}, "one")
	testtools.RunGit(t, r.work, "tag", "v1")
	testtools.RunGit(t, r.work, "checkout", "-q", "-b", "feature")
	r.cfeature = commit(map[string]string{"version.txt": "feature", "extra/vars.tfvars": `x = 1`}, "feature")
	testtools.RunGit(t, r.work, "checkout", "-q", "main")
	r.c2 = commit(map[string]string{"version.txt": "2"}, "two")
	testtools.RunGit(t, root, "clone", "-q", "--bare", r.work, r.bare)
	r.url = "file://" + r.bare
	return r
}

func readFile(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestCheckoutRefs(t *testing.T) {
	t.Parallel()
	r := newRepo(t)
	c := &gitsource.Cache{Dir: t.TempDir()}
	ctx := context.Background()
	for _, tc := range []struct {
		name, url, ref, commit, version string
	}{
		{"tag", r.url, "v1", r.c1, "1"},
		{"default branch", r.url, "", r.c2, "2"},
		{"branch", r.url, "feature", r.cfeature, "feature"},
		{"full commit", r.url, r.c1, r.c1, "1"},
		{"short commit", r.url, r.c2[:10], r.c2, "2"},
		{"plain path", r.bare, "v1", r.c1, "1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir, commit, err := c.Checkout(ctx, tc.url, tc.ref)
			if err != nil {
				t.Fatal(err)
			}
			if commit != tc.commit {
				t.Errorf("commit = %s, want %s", commit, tc.commit)
			}
			if got := readFile(t, filepath.Join(dir, "version.txt")); got != tc.version {
				t.Errorf("version.txt = %q, want %q", got, tc.version)
			}
			if filepath.Base(dir) != tc.commit {
				t.Errorf("checkout folder %s is not named after the commit", dir)
			}
		})
	}
}

func TestCheckoutIsReusedAndFetchSeesNewCommits(t *testing.T) {
	t.Parallel()
	r := newRepo(t)
	c := &gitsource.Cache{Dir: t.TempDir()}
	ctx := context.Background()
	dir, _, err := c.Checkout(ctx, r.url, "main")
	if err != nil {
		t.Fatal(err)
	}
	// A marker survives the second call: the folder was reused, not rewritten.
	marker := filepath.Join(dir, ".marker")
	if err := os.WriteFile(marker, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	again, _, err := c.Checkout(ctx, r.url, "main")
	if err != nil || again != dir {
		t.Fatalf("second checkout = %s, %v; want %s", again, err, dir)
	}
	if _, err := os.Stat(marker); err != nil {
		t.Fatal("checkout folder was rewritten")
	}

	// Push a new commit to main: the next checkout fetches and sees it.
	testtools.WriteFiles(t, r.work, map[string]string{"version.txt": "3"})
	testtools.RunGit(t, r.work, "commit", "-q", "-am", "three")
	testtools.RunGit(t, r.work, "push", "-q", r.bare, "main")
	dir3, commit3, err := c.Checkout(ctx, r.url, "main")
	if err != nil {
		t.Fatal(err)
	}
	if want := testtools.RunGit(t, r.work, "rev-parse", "HEAD"); commit3 != want {
		t.Errorf("after push: commit %s, want %s", commit3, want)
	}
	if got := readFile(t, filepath.Join(dir3, "version.txt")); got != "3" {
		t.Errorf("after push: version.txt = %q", got)
	}
}

func TestResolve(t *testing.T) {
	t.Parallel()
	r := newRepo(t)
	c := &gitsource.Cache{Dir: t.TempDir()}
	got, err := c.Resolve(context.Background(), r.url, "v1")
	if err != nil || got != r.c1 {
		t.Fatalf("Resolve(v1) = %s, %v; want %s", got, err, r.c1)
	}
}

func TestReadFile(t *testing.T) {
	t.Parallel()
	r := newRepo(t)
	c := &gitsource.Cache{Dir: t.TempDir()}
	ctx := context.Background()
	b, err := c.ReadFile(ctx, r.url, "feature", "extra/vars.tfvars")
	if err != nil || string(b) != "x = 1" {
		t.Fatalf("ReadFile = %q, %v", b, err)
	}
	if _, err := c.ReadFile(ctx, r.url, "main", "extra/vars.tfvars"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("missing file: err = %v, want fs.ErrNotExist", err)
	}
	if _, err := c.ReadFile(ctx, r.url, "main", "../etc/passwd"); err == nil {
		t.Error("a path leaving the repository was accepted")
	}
}

func TestErrors(t *testing.T) {
	t.Parallel()
	r := newRepo(t)
	c := &gitsource.Cache{Dir: t.TempDir()}
	ctx := context.Background()
	if _, _, err := c.Checkout(ctx, r.url, "no-such-ref"); !errors.Is(err, gitsource.ErrUnknownRef) {
		t.Errorf("unknown ref: err = %v, want ErrUnknownRef", err)
	}
	if _, _, err := c.Checkout(ctx, r.url, "--upload-pack=touch /tmp/x"); err == nil {
		t.Error("a ref that looks like an option was accepted")
	}
	if _, _, err := c.Checkout(ctx, "file://"+filepath.Join(t.TempDir(), "missing.git"), ""); err == nil {
		t.Error("a missing repository was accepted")
	}
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if _, _, err := c.Checkout(cancelled, r.url, ""); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: err = %v, want context.Canceled", err)
	}
}

func TestConcurrentCheckouts(t *testing.T) {
	t.Parallel()
	r := newRepo(t)
	dir := t.TempDir()
	var wg sync.WaitGroup
	errs := make([]error, 8)
	dirs := make([]string, 8)
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// Separate Cache values share the folder, as two processes would.
			c := &gitsource.Cache{Dir: dir}
			ref := "v1"
			if i%2 == 1 {
				ref = r.c1
			}
			dirs[i], _, errs[i] = c.Checkout(context.Background(), r.url, ref)
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("checkout %d: %v", i, err)
		}
		if dirs[i] != dirs[0] {
			t.Errorf("checkout %d in %s, want %s", i, dirs[i], dirs[0])
		}
	}
	if got := readFile(t, filepath.Join(dirs[0], "dir", "a.txt")); got != "a" {
		t.Errorf("dir/a.txt = %q", got)
	}
}

// Fetched finds what an earlier Checkout exported, reading the mirror's
// refs as files: tags and commits as fixed, branches as last fetched, and
// nothing for what was never fetched or exported.
func TestFetchedReadsRefsWithoutGit(t *testing.T) {
	t.Parallel()
	r := newRepo(t)
	testtools.RunGit(t, r.bare, "tag", "-a", "v2", "-m", "annotated", r.c2)
	c := &gitsource.Cache{Dir: t.TempDir()}
	if _, _, ok := c.Fetched(r.url, "v1"); ok {
		t.Fatal("Fetched found a repository never fetched")
	}
	ctx := context.Background()
	for _, ref := range []string{"v1", "v2", "main"} {
		if _, _, err := c.Checkout(ctx, r.url, ref); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		ref, commit string
		fixed       bool
	}{
		{"v1", r.c1, true}, {"v2", r.c2, true}, {r.c1, r.c1, true},
		{"main", r.c2, false}, {"", r.c2, false},
		{"feature", "", false}, // fetched, never exported
		{"nope", "", false}, {"../../etc", "", false}, {r.c1[:8], "", false},
	} {
		dir, fixed, ok := c.Fetched(r.url, tc.ref)
		switch {
		case tc.commit == "" && ok:
			t.Errorf("%q: found %s", tc.ref, dir)
		case tc.commit != "" && (!ok || filepath.Base(dir) != tc.commit || fixed != tc.fixed):
			t.Errorf("%q: got %s fixed=%v ok=%v, want %s fixed=%v", tc.ref, dir, fixed, ok, tc.commit, tc.fixed)
		}
	}
	if _, _, ok := c.Fetched("file:///elsewhere.git", "v1"); ok {
		t.Error("Fetched found another URL")
	}
}
