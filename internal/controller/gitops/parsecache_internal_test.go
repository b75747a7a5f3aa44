package gitops

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"knit.dev/knit/internal/testtools"
)

// The parse cache must never serve a parse whose reads changed: each test
// records a first commit, changes something an environment file reads
// (never the file itself, unless said), and checks which environments run.

func webTemplate(echo string) string {
	return strings.ReplaceAll(benchTemplate, "echo SIZE", "echo "+echo)
}

func templateEnv(name, tpl string) string {
	return fmt.Sprintf(`apiVersion: knit.dev/v1
kind: Environment
spec:
  teamName: shop
  envName: %s
  template: {path: %s}
`, name, tpl)
}

func baseEnv(name, base string) string {
	return fmt.Sprintf(`apiVersion: knit.dev/v1
kind: Environment
spec:
  teamName: shop
  envName: %s
  extends: {path: %s}
`, name, base)
}

// step commits the changes (content "" removes a file, "->TARGET" writes a
// symlink), polls, and returns the environments whose runs it started,
// sorted.
func (f *benchFleet) step(changes map[string]string) []string {
	f.b.Helper()
	for name, content := range changes {
		p := filepath.Join(f.repo, filepath.FromSlash(name))
		if err := os.RemoveAll(p); err != nil {
			f.b.Fatal(err)
		}
		switch {
		case content == "":
		case strings.HasPrefix(content, "->"):
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				f.b.Fatal(err)
			}
			if err := os.Symlink(strings.TrimPrefix(content, "->"), p); err != nil {
				f.b.Fatal(err)
			}
		default:
			testtools.WriteFiles(f.b, f.repo, map[string]string{name: content})
		}
	}
	testtools.RunGit(f.b, f.repo, "add", "-A")
	testtools.RunGit(f.b, f.repo, "commit", "-q", "--allow-empty", "-m", "step")
	before := len(f.q.envs)
	f.loop()
	f.settle(0)
	got := slices.Clone(f.q.envs[before:])
	sort.Strings(got)
	return got
}

func expectRuns(t *testing.T, what string, got []string, want ...string) {
	t.Helper()
	if !slices.Equal(got, want) {
		t.Errorf("%s: runs of %q, want %q", what, got, want)
	}
}

func TestATemplateCommitReachesExactlyItsUsersThroughTheCache(t *testing.T) {
	f := newRepoFleet(t, map[string]string{
		"templates/web.yaml": webTemplate("web"), "templates/api.yaml": webTemplate("api"),
		"envs/a.yaml": templateEnv("a", "../templates/web.yaml"), "envs/b.yaml": templateEnv("b", "../templates/web.yaml"),
		"envs/c.yaml": templateEnv("c", "../templates/api.yaml"),
	}, nil)
	expectRuns(t, "an unrelated commit", f.step(map[string]string{"README.md": "hello\n"}))
	expectRuns(t, "the web template changed", f.step(map[string]string{"templates/web.yaml": webTemplate("web2")}), "shop/a", "shop/b")
	expectRuns(t, "the api template changed", f.step(map[string]string{"templates/api.yaml": webTemplate("api2")}), "shop/c")
	expectRuns(t, "one file changed", f.step(map[string]string{"envs/b.yaml": templateEnv("b", "../templates/api.yaml")}), "shop/b")
}

func TestABaseFileChangedAloneReappliesWhatExtendsIt(t *testing.T) {
	f := newRepoFleet(t, map[string]string{
		"templates/web.yaml": webTemplate("web"),
		"envs/base/web.yaml": templateEnv("base", "../../templates/web.yaml"),
		"envs/a.yaml":        baseEnv("a", "./base/web.yaml"),
		"envs/b.yaml":        templateEnv("b", "../templates/web.yaml"),
	}, nil)
	expectRuns(t, "the base changed", f.step(map[string]string{"envs/base/web.yaml": templateEnv("base", "../../templates/web.yaml") + "  parameters: {size: \"2\"}\n"}),
		"shop/a", "shop/base")
	expectRuns(t, "the base's template changed", f.step(map[string]string{"templates/web.yaml": webTemplate("web2")}), "shop/a", "shop/b", "shop/base")
}

func TestASymlinkRetargetedIsSeenThroughTheCache(t *testing.T) {
	f := newRepoFleet(t, map[string]string{
		"templates/v1/web.yaml": webTemplate("v1"), "templates/v2/web.yaml": webTemplate("v2"),
		"envs/a.yaml": templateEnv("a", "../templates/current/web.yaml"),
		"envs/b.yaml": templateEnv("b", "../templates/web.yaml"),
	}, nil)
	// The folder on the way and the file itself become links.
	expectRuns(t, "the folder links to v1", f.step(map[string]string{"templates/current": "->v1"}), "shop/a")
	expectRuns(t, "the folder links to v2", f.step(map[string]string{"templates/current": "->v2"}), "shop/a")
	expectRuns(t, "the file links to v1", f.step(map[string]string{"templates/web.yaml": "->v1/web.yaml"}), "shop/b")
	expectRuns(t, "the file links to v2", f.step(map[string]string{"templates/web.yaml": "->v2/web.yaml"}), "shop/b")
	expectRuns(t, "the link's target changed", f.step(map[string]string{"templates/v2/web.yaml": webTemplate("v3")}), "shop/a", "shop/b")
}

func TestTheSameContentAtTwoPathsIsParsedAtEach(t *testing.T) {
	doc := templateEnv("a", "./web.yaml")
	f := newRepoFleet(t, map[string]string{"envs/x/web.yaml": webTemplate("x"), "envs/x/a.yaml": doc}, nil)
	// A copy where ./web.yaml is another template: the same bytes, another
	// environment file; both declare shop/a, the first followed.
	expectRuns(t, "a copy next to another template", f.step(map[string]string{"envs/y/web.yaml": webTemplate("y"), "envs/y/a.yaml": doc}))
	expectRuns(t, "the followed copy's template removed", f.step(map[string]string{"envs/x/web.yaml": ""}), "shop/a")
	f.g.mu.Lock()
	want := f.g.memo.wants["shop/a"]
	f.g.mu.Unlock()
	if want.Path != "envs/y/a.yaml" {
		t.Errorf("shop/a follows %s, want the copy whose template is there, envs/y/a.yaml", want.Path)
	}
}

func TestARenamedFileIsParsedWhereItIsNow(t *testing.T) {
	doc := templateEnv("a", "../templates/web.yaml")
	f := newRepoFleet(t, map[string]string{"templates/web.yaml": webTemplate("web"), "envs/a.yaml": doc}, nil)
	expectRuns(t, "renamed", f.step(map[string]string{"envs/a.yaml": "", "envs/b.yaml": doc}))
	// The same bytes one folder down read envs/templates/web.yaml, another
	// template: the environment runs with it.
	expectRuns(t, "moved where its template is another", f.step(map[string]string{"envs/b.yaml": "", "envs/other/b.yaml": doc,
		"envs/templates/web.yaml": webTemplate("other")}), "shop/a")
	f.g.mu.Lock()
	want := f.g.memo.wants["shop/a"]
	f.g.mu.Unlock()
	if want.Path != "envs/other/b.yaml" || want.Teardown {
		t.Errorf("after the move: %+v, want an apply of envs/other/b.yaml", want)
	}
}

func TestADeletedTemplateServesNoCachedParse(t *testing.T) {
	f := newRepoFleet(t, map[string]string{
		"templates/web.yaml": webTemplate("web"),
		"envs/a.yaml":        templateEnv("a", "../templates/web.yaml"),
		// Another file declaring shop/a, without the template: followed
		// once envs/a.yaml no longer validates.
		"envs/z.yaml": strings.Replace(envDocIn("shop", "a"), "echo", "echo z", 1),
	}, nil)
	expectRuns(t, "the template deleted", f.step(map[string]string{"templates/web.yaml": ""}), "shop/a")
	f.g.mu.Lock()
	want := f.g.memo.wants["shop/a"]
	f.g.mu.Unlock()
	if want.Path != "envs/z.yaml" {
		t.Errorf("shop/a follows %s, want envs/z.yaml, the one file that still validates", want.Path)
	}
	expectRuns(t, "the template back as it was", f.step(map[string]string{"templates/web.yaml": webTemplate("web")}))
}

func envDocIn(team, name string) string {
	return fmt.Sprintf(`apiVersion: knit.dev/v1
kind: Environment
spec:
  teamName: %s
  envName: %s
  components:
    - name: app
      type: script
      script: {apply: "echo"}
`, team, name)
}
