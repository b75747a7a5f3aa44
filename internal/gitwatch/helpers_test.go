package gitwatch_test

import (
	"context"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"knit.dev/knit/internal/gitwatch"
	"knit.dev/knit/internal/testtools"
)

// remote is a bare repository served over file://, and a working clone that
// commits and pushes to it.
type remote struct {
	t          testing.TB
	work, bare string
	url        string
}

// initialFiles are the first commit: environment files under envs/, a module
// they use, and files a watcher of envs/ must ignore.
var initialFiles = map[string]string{
	"envs/a.yaml":         "name: a\n",
	"envs/b.yaml":         "name: b\n",
	"envs/sub/c.yml":      "name: c\n",
	"envs/notes.txt":      "not an environment",
	"other/x.yaml":        "name: outside\n",
	"modules/net/main.tf": "# v1\n",
	"README.md":           "# infra\n",
}

func newRemote(t testing.TB, files map[string]string) *remote {
	t.Helper()
	testtools.Git(t)
	root := t.TempDir()
	r := &remote{t: t, work: filepath.Join(root, "work"), bare: filepath.Join(root, "remote.git")}
	testtools.RunGit(t, root, "init", "-q", "--bare", r.bare)
	testtools.RunGit(t, root, "init", "-q", r.work)
	testtools.RunGit(t, r.work, "remote", "add", "origin", r.bare)
	r.url = "file://" + r.bare
	r.commit("initial", files)
	return r
}

// commit writes files (content "" removes the file), commits them as Ada
// and pushes; it returns the commit's hash.
func (r *remote) commit(msg string, files map[string]string) string {
	r.t.Helper()
	for name, content := range files {
		if content == "" {
			testtools.RunGit(r.t, r.work, "rm", "-q", "--", name)
			continue
		}
		testtools.WriteFiles(r.t, r.work, map[string]string{name: content})
	}
	testtools.RunGit(r.t, r.work, "add", "-A")
	testtools.RunGit(r.t, r.work, "commit", "-q", "--author=Ada Lovelace <ada@example.com>", "-m", msg)
	testtools.RunGit(r.t, r.work, "push", "-q", "-f", "origin", "HEAD:main")
	return testtools.RunGit(r.t, r.work, "rev-parse", "HEAD")
}

func newWatcher(t testing.TB, cfg gitwatch.Config) *gitwatch.Watcher {
	t.Helper()
	if cfg.CacheDir == "" {
		cfg.CacheDir = t.TempDir()
	}
	w, err := gitwatch.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return w
}

func poll(t testing.TB, w *gitwatch.Watcher, after string) []gitwatch.Commit {
	t.Helper()
	commits, err := w.Poll(context.Background(), after)
	if err != nil {
		t.Fatal(err)
	}
	return commits
}

// summary writes changes as "path=content" or "path removed", sorted.
func summary(changes []gitwatch.Change) string {
	var out []string
	for _, c := range changes {
		if c.Removed {
			out = append(out, c.Path+" removed")
		} else {
			out = append(out, c.Path+"="+strings.TrimSpace(string(c.Content)))
		}
	}
	sort.Strings(out)
	return strings.Join(out, "; ")
}

func readFile(t testing.TB, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
