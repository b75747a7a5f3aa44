package gitops

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"sort"
	"strings"
	"testing"

	"knit.dev/knit/internal/adapters"
	"knit.dev/knit/internal/gitwatch"
	"knit.dev/knit/internal/knit"
	"knit.dev/knit/internal/testtools"
)

const branchTemplate = `apiVersion: knit.dev/v1
kind: EnvironmentTemplate
metadata: {name: web}
spec:
  parameters:
    - {name: size, type: string, default: "1"}
  components:
    - name: app
      type: script
      script: {apply: "echo SIZE ${param.size}"}
`

const branchEnv1 = `apiVersion: knit.dev/v1
kind: Environment
spec:
  teamName: shop
  envName: dev
  template: {path: ../templates/web.yaml}
`

func branchSet(els string) string {
	return `apiVersion: knit.dev/v1
kind: EnvironmentSet
metadata: {name: many}
spec:
  teamName: shop
  envName: "pr-{{ .name }}"
  template: {path: ../templates/web.yaml}
  parameters: {}
  generators:
    - list: {elements: [` + els + `]}
`
}

// branchFixture is a repository whose main commit the reconciler recorded,
// and a way to ask what a branch of it changes.
type branchFixture struct {
	t    *testing.T
	repo string
	g    *Reconciler
	w    *gitwatch.Watcher
}

func newBranchFixture(t *testing.T, files map[string]string) *branchFixture {
	repo := t.TempDir()
	testtools.RunGit(t, repo, "init", "-q", "-b", "main")
	testtools.WriteFiles(t, repo, files)
	testtools.RunGit(t, repo, "add", "-A")
	testtools.RunGit(t, repo, "commit", "-q", "-m", "first")
	ctx := context.Background()
	k, err := adapters.Open(ctx, adapters.Config{Config: knit.Config{DataDir: t.TempDir()}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { k.Close() })
	g := New(k, nil, Config{Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		Config: gitwatch.Config{URL: "file://" + repo, Branch: "main", Path: "envs/", CacheDir: t.TempDir()}})
	w, err := gitwatch.New(g.cfg.Config)
	if err != nil {
		t.Fatal(err)
	}
	commits, err := w.Poll(ctx, "")
	if err != nil || len(commits) == 0 {
		t.Fatalf("poll: %v %v", commits, err)
	}
	if err := g.recordCommit(ctx, commits[len(commits)-1], []string{"main"}, false); err != nil {
		t.Fatal(err)
	}
	return &branchFixture{t, repo, g, w}
}

// changes commits files ("" removes one) on branch and returns what the
// branch changes, as "id change" sorted.
func (f *branchFixture) changes(branch string, files map[string]string) []string {
	f.t.Helper()
	testtools.RunGit(f.t, f.repo, "checkout", "-q", "-b", branch, "main")
	for name, content := range files {
		if content == "" {
			testtools.RunGit(f.t, f.repo, "rm", "-q", name)
			continue
		}
		testtools.WriteFiles(f.t, f.repo, map[string]string{name: content})
		testtools.RunGit(f.t, f.repo, "add", name)
	}
	testtools.RunGit(f.t, f.repo, "commit", "-q", "--allow-empty", "-m", "on "+branch)
	testtools.RunGit(f.t, f.repo, "checkout", "-q", "main")
	ctx := context.Background()
	c, err := f.w.FetchBranch(ctx, branch)
	if err != nil {
		f.t.Fatal(err)
	}
	watched, err := f.g.watchedTree(ctx, f.w)
	if err != nil {
		f.t.Fatal(err)
	}
	envs, err := f.g.branchChanges(ctx, c, branch, watched)
	if err != nil {
		f.t.Fatal(err)
	}
	var out []string
	for _, e := range envs {
		if e.change != "destroy" && e.env == nil {
			f.t.Errorf("%s %s has no environment to plan", e.id, e.change)
		}
		out = append(out, e.id+" "+e.change)
	}
	sort.Strings(out)
	return out
}

// A branch that changes only a template (or a file an environment extends)
// changes every environment built from it; an environment set's file on a
// branch previews its elements: a new one as create, a changed one as
// update, a gone one as destroy.
func TestABranchChangingATemplateOrASetPreviewsItsEnvironments(t *testing.T) {
	f := newBranchFixture(t, map[string]string{
		"templates/web.yaml": branchTemplate,
		"envs/dev.yaml":      branchEnv1,
		"envs/base.yaml":     strings.Replace(branchEnv1, "envName: dev", "envName: base", 1),
		"envs/ops.yaml":      "apiVersion: knit.dev/v1\nkind: Environment\nspec:\n  teamName: shop\n  envName: ops\n  extends: {path: base.yaml}\n",
		"envs/set.yaml":      branchSet(`{name: a}, {name: b, parameters: {size: "2"}}, {name: c}`),
	})
	got := f.changes("feature/template", map[string]string{"templates/web.yaml": strings.Replace(branchTemplate, `"1"`, `"3"`, 1)})
	want := []string{"shop/base update", "shop/dev update", "shop/ops update", "shop/pr-a update", "shop/pr-b update", "shop/pr-c update"}
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("a branch changing only the template changes %v, want %v", got, want)
	}
	got = f.changes("feature/extends", map[string]string{"envs/base.yaml": strings.Replace(branchEnv1, "envName: dev", "envName: base\n  parameters: {size: \"5\"}", 1)})
	want = []string{"shop/base update", "shop/ops update"}
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("a branch changing only the extended file changes %v, want %v", got, want)
	}
	// An element the branch leaves as it is (a) is left out, though the
	// set file's sum is every element's.
	got = f.changes("feature/set", map[string]string{"envs/set.yaml": branchSet(`{name: a}, {name: b, parameters: {size: "4"}}, {name: d}`)})
	want = []string{"shop/pr-b update", "shop/pr-c destroy", "shop/pr-d create"}
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("a branch changing the set changes %v, want %v", got, want)
	}
	got = f.changes("feature/noset", map[string]string{"envs/set.yaml": ""})
	want = []string{"shop/pr-a destroy", "shop/pr-b destroy", "shop/pr-c destroy"}
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("a branch removing the set changes %v, want %v", got, want)
	}
	// A set that does not validate on the branch tears nothing down.
	got = f.changes("feature/badset", map[string]string{"envs/set.yaml": strings.Replace(branchSet(`{name: a}`), "list:", "lsit:", 1)})
	if len(got) != 0 {
		t.Errorf("a branch breaking the set changes %v, want nothing planned", got)
	}
	if got := f.changes("feature/nothing", nil); len(got) != 0 {
		t.Errorf("a branch changing nothing changes %v", got)
	}
}

// A set of 999 elements of which a branch changes one previews that one,
// not 999 updates (beyond MaxPreviewEnvs: nothing at all); a branch
// adding the 1,000th element (spec.MaxSetElements) previews only its
// create.
func TestABranchChangingOneElementOfAThousandPreviewsThatOne(t *testing.T) {
	els := func(changed string) string {
		var b strings.Builder
		for i := range 999 {
			if i > 0 {
				b.WriteString(", ")
			}
			size := "1"
			if fmt.Sprintf("e%04d", i) == changed {
				size = "2"
			}
			fmt.Fprintf(&b, `{name: e%04d, parameters: {size: "%s"}}`, i, size)
		}
		return b.String()
	}
	f := newBranchFixture(t, map[string]string{"templates/web.yaml": branchTemplate, "envs/set.yaml": branchSet(els(""))})
	if got := f.changes("feature/one", map[string]string{"envs/set.yaml": branchSet(els("e0500"))}); strings.Join(got, ",") != "shop/pr-e0500 update" {
		t.Errorf("a branch changing one element of 999 changes %d: %.200v", len(got), got)
	}
	if got := f.changes("feature/more", map[string]string{"envs/set.yaml": branchSet(els("") + `, {name: new}`)}); strings.Join(got, ",") != "shop/pr-new create" {
		t.Errorf("a branch adding one element changes %d: %.200v", len(got), got)
	}
}
