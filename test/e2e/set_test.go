package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// setTemplate is a template of one file component writing files/NAME.txt.
const setTemplate = `apiVersion: knit.dev/v1
kind: EnvironmentTemplate
metadata: {name: preview}
spec:
  parameters:
    - {name: name, type: string, required: true}
  components:
    - name: app
      type: terraform
      module: {source: ../modules/file}
      variables:
        - {name: path, value: "FILES/${param.name}.txt"}
        - {name: content, value: "app ${param.name}"}
`

func envSet(envName, params, generators string) string {
	return `apiVersion: knit.dev/v1
kind: EnvironmentSet
metadata: {name: previews}
spec:
  teamName: shop
  envName: "` + envName + `"
  autoApprove: true
  template: {path: ../templates/preview.yaml}
  parameters: ` + params + `
  generators:
` + generators
}

func listSet(names ...string) string {
	var els []string
	for _, n := range names {
		els = append(els, "{name: "+n+", parameters: {name: "+n+"}}")
	}
	return envSet("{{ .name }}", "{}", "    - list: {elements: ["+strings.Join(els, ", ")+"]}\n")
}

func setRepo(t *testing.T, w *world, set string) *gitRepo {
	return newGitRepo(t, map[string]string{
		"modules/file/main.tf":   fileModule,
		"templates/preview.yaml": strings.ReplaceAll(setTemplate, "FILES", w.path("files")),
		"envs/previews.yaml":     set,
	})
}

// Issue 26 item 2: a list set of three elements creates three
// environments; removing one element tears its environment down (through
// the engine's teardown, as a removed file's), the others untouched.
func TestGitOpsListSetCreatesOneEnvironmentPerElementAndTearsDownARemovedOne(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	repo := setRepo(t, w, listSet("alpha", "beta", "gamma"))
	first := git(t, repo.work, "rev-parse", "HEAD")
	w.loggingTofu()
	s := w.startServer(gitServerArgs(repo)...)
	for _, env := range []string{"shop/alpha", "shop/beta", "shop/gamma"} {
		s.eventually(env+" applied from the set", func() bool { return s.appliedFrom(env, first) })
	}
	if got := w.read("files/beta.txt"); got != "app beta" {
		t.Fatalf("beta.txt = %q", got)
	}
	if revs := s.revisions("shop/beta"); len(revs) != 1 || !strings.HasSuffix(revs[0].Source, "envs/previews.yaml#beta") {
		t.Errorf("beta's revisions %+v: want one, from the set's element", revs)
	}
	w.toolRuns()

	// A set that does not validate (two elements named alpha, beta gone)
	// is recorded as invalid and tears nothing down.
	broken := repo.commit("previews: oops", map[string]string{"envs/previews.yaml": listSet("alpha", "alpha", "gamma")})
	s.logged("the broken commit recorded", committed(broken))
	s.eventually("the broken set recorded as invalid", func() bool { return s.invalidRecord("envs/previews.yaml") != "" })
	if e, _ := s.env("shop/beta"); e.Status != "provisioned" {
		t.Fatalf("beta is %s after a commit of a broken set, want provisioned", e.Status)
	}

	second := repo.commit("previews: beta done", map[string]string{"envs/previews.yaml": listSet("alpha", "gamma")})
	s.logged("the commit recorded", committed(second))
	s.eventually("beta torn down", func() bool { e, _ := s.env("shop/beta"); return e.Status == "torn-down" })
	if _, err := os.Stat(w.path("files/beta.txt")); err == nil {
		t.Error("beta.txt survived the teardown of its element")
	}
	for _, env := range []string{"shop/alpha", "shop/gamma"} {
		if e, _ := s.env(env); e.Status != "provisioned" {
			t.Errorf("%s is %s, want provisioned (its element stayed)", env, e.Status)
		}
	}
	seen := onlyDestroys(t, w.toolRuns())
	if !seen["destroy app"] {
		t.Errorf("want beta's app destroyed; saw %v", seen)
	}
}

// A gitBranches set: pushing feature/a creates pr-feature-a within one
// poll, with no commit on the watched branch; deleting the branch tears
// it down.
func TestGitOpsBranchSetFollowsBranches(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	repo := setRepo(t, w, envSet("pr-{{ .branch.slug }}", `{name: "pr-{{ .branch.slug }}"}`, "    - gitBranches: {pattern: \"feature/*\"}\n"))
	head := git(t, repo.work, "rev-parse", "HEAD")
	s := w.startServer(gitServerArgs(repo)...)
	s.logged("the first commit recorded", committed(head))

	git(t, repo.work, "push", "-q", "origin", "HEAD:refs/heads/feature/a", "HEAD:refs/heads/fix/b")
	s.eventually("pr-feature-a applied", func() bool { return s.appliedFrom("shop/pr-feature-a", head) })
	if got := w.read("files/pr-feature-a.txt"); got != "app pr-feature-a" {
		t.Fatalf("pr-feature-a.txt = %q", got)
	}
	if _, code := s.env("shop/pr-fix-b"); code != 404 {
		t.Errorf("fix/b does not match feature/*, yet shop/pr-fix-b answers %d", code)
	}

	git(t, repo.work, "push", "-q", "origin", "--delete", "feature/a")
	s.eventually("pr-feature-a torn down", func() bool { e, _ := s.env("shop/pr-feature-a"); return e.Status == "torn-down" })
	if _, err := os.Stat(filepath.Join(w.path("files"), "pr-feature-a.txt")); err == nil {
		t.Error("pr-feature-a.txt survived the branch's deletion")
	}
}

// A template and a set in the watched folder are neither applied nor
// recorded as invalid environment files.
func TestGitOpsTemplateInTheWatchedFolderIsNotAnInvalidEnvironment(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	repo := newGitRepo(t, map[string]string{
		"envs/modules/file/main.tf": fileModule,
		"envs/preview.yaml":         strings.ReplaceAll(strings.Replace(setTemplate, "../modules/file", "./modules/file", 1), "FILES", w.path("files")),
		"envs/previews.yaml":        strings.Replace(listSet("alpha"), "../templates/preview.yaml", "./preview.yaml", 1),
	})
	head := git(t, repo.work, "rev-parse", "HEAD")
	s := w.startServer(gitServerArgs(repo)...)
	s.eventually("alpha applied", func() bool { return s.appliedFrom("shop/alpha", head) })
	if rec := s.invalidRecord("envs/preview.yaml"); rec != "" {
		t.Errorf("the template was recorded as the invalid environment file %s", rec)
	}
	if strings.Contains(s.logText(), "invalid environment file") {
		t.Errorf("the server logged an invalid environment file:\n%s", s.logText())
	}
}

// knit validate -f SET expands the set and reports each mistake at its
// line; a valid set names how many environments it makes.
func TestValidateASet(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	git(t, w.dir, "init", "-q") // the repository's root bounds the template's path
	w.write(map[string]string{
		"modules/file/main.tf":   fileModule,
		"templates/preview.yaml": strings.ReplaceAll(setTemplate, "FILES", w.path("files")),
		"envs/ok.yaml":           listSet("alpha", "beta"),
		"envs/dup.yaml":          listSet("alpha", "alpha"),
	})
	if r := w.ok("validate", "-f", "envs/ok.yaml"); !strings.Contains(r.stdout, "valid: environment set of 2 environments") {
		t.Errorf("validate ok.yaml: %s", r.stdout)
	}
	r := w.knit("validate", "-f", "envs/dup.yaml")
	if r.code != 1 || !strings.Contains(r.stdout, `envs/dup.yaml:11:67:`) || !strings.Contains(r.stdout, `two elements generate the envName "alpha"`) {
		t.Errorf("validate dup.yaml: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
}

// knit render -f SET prints every environment the set generates (YAML
// documents, or a JSON list with origins under --explain); a gitBranches
// set needs --branches locally and says so at the generator's line.
func TestRenderASet(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	git(t, w.dir, "init", "-q") // the repository's root bounds the template's path
	w.write(map[string]string{
		"modules/file/main.tf":   fileModule,
		"templates/preview.yaml": strings.ReplaceAll(setTemplate, "FILES", w.path("files")),
		"envs/list.yaml":         listSet("alpha", "beta"),
		"envs/branches.yaml":     envSet("pr-{{ .branch.slug }}", `{name: "pr-{{ .branch.slug }}"}`, "    - gitBranches: {pattern: \"feature/*\"}\n"),
	})
	r := w.ok("render", "-f", "envs/list.yaml")
	if docs := strings.Split(r.stdout, "\n---\n"); len(docs) != 2 || !strings.Contains(docs[0], "envName: alpha") || !strings.Contains(docs[1], "envName: beta") ||
		!strings.Contains(docs[1], "value: app beta") {
		t.Errorf("render list.yaml: want two YAML documents, alpha then beta:\n%s", r.stdout)
	}
	var list []struct {
		Environment struct {
			Spec struct{ EnvName string } `json:"spec"`
		} `json:"environment"`
		Origins map[string]string `json:"origins"`
	}
	r = w.ok("render", "-f", "envs/list.yaml", "-o", "json", "--explain")
	if err := json.Unmarshal([]byte(r.stdout), &list); err != nil || len(list) != 2 || list[1].Environment.Spec.EnvName != "beta" {
		t.Fatalf("render -o json --explain: %v\n%s", err, r.stdout)
	}
	if o := list[0].Origins["spec.components[0].variables[1].value"]; !strings.Contains(o, "templates/preview.yaml:") {
		t.Errorf("origin of alpha's content: %q, want the template's line (origins %v)", o, list[0].Origins)
	}

	r = w.knit("render", "-f", "envs/branches.yaml")
	if r.code != 1 || !strings.Contains(r.stderr, "envs/branches.yaml:11:") || !strings.Contains(r.stderr, "--branches") {
		t.Errorf("render of a gitBranches set without --branches: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	r = w.ok("render", "-f", "envs/branches.yaml", "--branches", "feature/a,fix/b,feature/C_d")
	if !strings.Contains(r.stdout, "envName: pr-feature-a") || !strings.Contains(r.stdout, "envName: pr-feature-c-d") || strings.Contains(r.stdout, "fix") {
		t.Errorf("render --branches: want pr-feature-a and pr-feature-c-d only:\n%s", r.stdout)
	}
	w.write(map[string]string{"envs/one.yaml": strings.Replace(listSet("x"), "kind: EnvironmentSet", "kind: Environment", 1)})
	if r := w.knit("render", "-f", "envs/one.yaml", "--branches", "a"); r.code == 0 || !strings.Contains(r.stderr, "--branches is for an EnvironmentSet") {
		t.Errorf("--branches on a file that is not a set: exit %d\n%s", r.code, r.stderr)
	}
}
