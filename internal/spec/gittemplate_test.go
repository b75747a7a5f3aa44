package spec_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"knit.dev/knit/internal/gitsource"
	"knit.dev/knit/internal/spec"
	"knit.dev/knit/internal/testtools"
)

// A template from git at a pinned tag: its module becomes the same folder
// of that repository at the tag's commit, and the environment records the
// commit.
func TestTemplateFromGitIsPinnedToItsCommit(t *testing.T) {
	testtools.Git(t)
	work := t.TempDir()
	testtools.RunGit(t, work, "init", "-q")
	testtools.WriteFiles(t, work, map[string]string{
		"templates/web.yaml": `apiVersion: knit.dev/v1
kind: EnvironmentTemplate
spec:
  parameters: [{name: size, type: number, default: 1}]
  components:
    - name: app
      type: terraform
      module: {source: ../modules/app}
      variables: [{name: size, value: "${param.size}"}]
`,
		"modules/app/main.tf": `variable "size" { type = number }` + "\n",
	})
	testtools.RunGit(t, work, "add", "-A")
	testtools.RunGit(t, work, "commit", "-qm", "v1")
	testtools.RunGit(t, work, "tag", "v1")
	commit := testtools.RunGit(t, work, "rev-parse", "HEAD")
	url := "file://" + work

	cache := &gitsource.Cache{Dir: t.TempDir()}
	opts := spec.Options{Fetched: cache.Fetched, Checkout: func(u, ref string) (string, string, error) {
		return cache.Checkout(context.Background(), u, ref)
	}}
	envs := t.TempDir()
	write := func(ref string, path ...string) string {
		p := filepath.Join(envs, "dev.yaml")
		doc := "apiVersion: knit.dev/v1\nkind: Environment\nspec:\n  teamName: shop\n  envName: dev\n  template: {git: \"" + url + "\"" + ref + ", path: " + strings.Join(append(path, "templates/web.yaml")[:1], "") + "}\n  parameters: {size: 3}\n"
		if err := os.WriteFile(p, []byte(doc), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	env, ds := spec.LoadWith(write(", ref: v1"), opts)
	if ds.HasErrors() {
		t.Fatalf("unexpected problems:\n%s", ds)
	}
	if got, want := env.Component("app").Module.Source, "git::"+url+"//modules/app?ref="+commit; got != want {
		t.Errorf("module source %q, want %q", got, want)
	}
	if got, want := env.Metadata.Annotations[spec.AnnotationTemplate], url+"@"+commit+":templates/web.yaml"; got != want {
		t.Errorf("template annotation %q, want %q", got, want)
	}

	// Unpinned, or a path out of the repository: refused.
	_, ds = spec.LoadWith(write(""), opts)
	if !strings.Contains(ds.String(), "spec.template.ref: a template from git needs a ref") {
		t.Errorf("an unpinned git template:\n%s", ds)
	}
	_, ds = spec.LoadWith(write(", ref: v1", "../../../etc/passwd"), opts)
	if !strings.Contains(ds.String(), `template: path "../../../etc/passwd" leaves`) {
		t.Errorf("a git template path out of its repository:\n%s", ds)
	}
}
