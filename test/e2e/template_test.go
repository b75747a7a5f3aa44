package e2e

import (
	"encoding/json"
	"strings"
	"testing"
)

// webTemplate is a template of two file components: its module sits
// beside the template's folder (../modules/file), and its parameters are
// a required tier with an enum and a size with a default.
const webTemplate = `apiVersion: knit.dev/v1
kind: EnvironmentTemplate
metadata: {name: web}
spec:
  parameters:
    - {name: tier, type: string, required: true, enum: [dev, prod]}
    - {name: size, type: number, default: 1, description: how many}
  components:
    - name: app
      type: terraform
      module: {source: ../modules/file}
      variables:
        - {name: path, value: "FILES/${param.tier}-app.txt"}
        - {name: content, value: "size ${param.size}"}
    - name: web
      type: terraform
      module: {source: ../modules/file}
      dependsOn: [app]
      variables:
        - {name: path, value: "FILES/${param.tier}-web.txt"}
        - {name: content, value: web}
`

func templatedEnv(name, params, overrides string) string {
	return `apiVersion: knit.dev/v1
kind: Environment
spec:
  teamName: shop
  envName: ` + name + `
  autoApprove: true
  template: {path: ../templates/web.yaml}
  parameters: ` + params + `
` + overrides
}

// templateWorld is a git work tree holding the template, its module and
// two environments built from it.
func templateWorld(t *testing.T) *world {
	w := newWorld(t)
	git(t, w.dir, "init", "-q")
	files := w.path("files")
	w.write(map[string]string{
		"modules/file/main.tf": fileModule,
		"templates/web.yaml":   strings.ReplaceAll(webTemplate, "FILES", files),
		"envs/dev.yaml":        templatedEnv("dev", "{tier: dev, size: 2}", ""),
		"envs/prod.yaml": templatedEnv("prod", "{tier: prod, size: 5}", `  overrides:
    components:
      - name: web
        variables: [{name: content, value: prod-web}]
`),
	})
	return w
}

func TestDevAndProdFromOneTemplateAreAppliedWithTheirParameters(t *testing.T) {
	t.Parallel()
	w := templateWorld(t)
	w.ok("apply", "-f", "envs/dev.yaml")
	w.ok("apply", "-f", "envs/prod.yaml")
	for file, want := range map[string]string{
		"files/dev-app.txt": "size 2", "files/dev-web.txt": "web",
		"files/prod-app.txt": "size 5", "files/prod-web.txt": "prod-web",
	} {
		if got := w.read(file); got != want {
			t.Errorf("%s = %q, want %q", file, got, want)
		}
	}

	// render --explain names where each value came from.
	out := w.ok("render", "-f", "envs/prod.yaml", "--explain").stdout
	for _, want := range []string{
		"source: ../modules/file # templates/web.yaml:11",
		"value: size 5 # templates/web.yaml:14, ${param.size} from envs/prod.yaml:8",
		"value: prod-web # envs/prod.yaml:12",
		"knit.dev/template: ../templates/web.yaml@sha256:",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("render --explain lacks %q:\n%s", want, out)
		}
	}
	var origins struct{ Origins map[string]string }
	if err := json.Unmarshal([]byte(w.ok("render", "-f", "envs/dev.yaml", "-o", "json", "--explain").stdout), &origins); err != nil {
		t.Fatal(err)
	}
	if got := origins.Origins["spec.components[1].dependsOn[0]"]; got != "templates/web.yaml:18" {
		t.Errorf("web's dependsOn comes from %q, want templates/web.yaml:18", got)
	}

	// A change to the template alone is a new revision of each environment.
	before := w.revisionOf("shop/dev")
	w.write(map[string]string{"templates/web.yaml": strings.ReplaceAll(webTemplate, "FILES", w.path("files")) + "# reviewed\n"})
	w.ok("apply", "-f", "envs/dev.yaml")
	if after := w.revisionOf("shop/dev"); after != before+1 {
		t.Errorf("after a change to the template alone, shop/dev is at revision %d, want %d", after, before+1)
	}
}

// revisionOf is the revision env's newest run applied.
func (w *world) revisionOf(env string) int {
	w.t.Helper()
	var runs []struct{ Revision int }
	if err := json.Unmarshal([]byte(w.ok("history", env, "-o", "json").stdout), &runs); err != nil || len(runs) == 0 {
		w.t.Fatalf("history of %s: %v", env, err)
	}
	return runs[0].Revision
}

func TestTemplateMistakesFailWithTheirFileAndLine(t *testing.T) {
	t.Parallel()
	w := templateWorld(t)
	w.write(map[string]string{
		"envs/bad.yaml": templatedEnv("bad", "{tier: staging, sise: 3}", `  overrides:
    components:
      - name: db
        variables: [{name: size, value: 1}]
`),
	})
	r := w.knit("apply", "-f", "envs/bad.yaml")
	if r.code != 1 {
		t.Fatalf("apply of a bad file exits %d, want 1\n%s%s", r.code, r.stdout, r.stderr)
	}
	for _, want := range []string{
		`envs/bad.yaml:8:16: spec.parameters.tier: parameter "tier" must be one of "dev", "prod", found "staging"`,
		`envs/bad.yaml:8:31: spec.parameters.sise: unknown parameter "sise"`,
		`envs/bad.yaml:11:9: spec.overrides.components[0].name: override of component "db": there is no component "db" to change`,
	} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("the errors lack %q:\n%s", want, r.stderr)
		}
	}
	// A template validates on its own, and is never applied as an environment.
	w.ok("validate", "-f", "templates/web.yaml")
	if r := w.knit("apply", "-f", "templates/web.yaml"); r.code != 1 || !strings.Contains(r.stderr, "this is an EnvironmentTemplate, not an Environment") {
		t.Errorf("apply of a template exits %d:\n%s", r.code, r.stderr)
	}
	if w.exists("files") {
		t.Error("a tool ran for an invalid file")
	}
}

// opsEnv builds on apps.yaml with two overrides: its own files.
const opsEnv = `apiVersion: knit.dev/v1
kind: Environment
metadata: {name: ops}
spec:
  envName: ops
  extends: {path: ./apps.yaml}
  overrides:
    components:
      - name: net
        variables: [{name: path, value: FILES/ops-net.txt}]
      - name: web
        variables: [{name: path, value: FILES/ops-web.txt}]
`

func TestGitOpsCommitToTheBaseFileAppliesEveryEnvironmentBuiltOnIt(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	files := w.path("files")
	apps := func(net string) string {
		return strings.Replace(gitEnv("apps", files, "v1", "", false), `value: "v1"`, `value: "`+net+`"`, 1)
	}
	repo := newGitRepo(t, map[string]string{
		"envs/team/modules/file/main.tf": fileModule,
		"envs/team/apps.yaml":            apps("v1"),
		"envs/team/ops.yaml":             strings.ReplaceAll(opsEnv, "FILES", files),
	})
	first := git(t, repo.work, "rev-parse", "HEAD")
	w.loggingTofu()
	s := w.startServer(gitServerArgs(repo)...)
	for _, env := range []string{"shop/apps", "shop/ops"} {
		s.eventually(env+" applied from the first commit", func() bool { return s.appliedFrom(env, first) })
	}
	if got := w.read("files/ops-web.txt"); got != "v1" {
		t.Fatalf("ops-web.txt = %q, want v1 (the base's content at ops' path)", got)
	}
	w.toolRuns() // forget the first applies

	// A commit that changes only the base file, and only net in it.
	second := repo.commit("apps: net v2", map[string]string{"envs/team/apps.yaml": apps("v2")})
	for _, env := range []string{"shop/apps", "shop/ops"} {
		s.eventually(env+" applied from the base's commit", func() bool { return s.appliedFrom(env, second) })
	}
	for file, want := range map[string]string{"files/apps-net.txt": "v2", "files/ops-net.txt": "v2", "files/ops-web.txt": "v1"} {
		if got := w.read(file); got != want {
			t.Errorf("%s = %q, want %q", file, got, want)
		}
	}
	applies := map[string]int{}
	for _, run := range w.toolRuns() {
		if f := strings.Fields(run); f[1] == "apply" {
			applies[f[0]]++
		}
	}
	if applies["net"] != 2 || applies["web"] != 0 {
		t.Errorf("tool applies after the base's commit: %v; want net twice (once per environment), web never", applies)
	}
	if revs := s.revisions("shop/ops"); len(revs) != 2 || revs[0].Commit != second {
		t.Errorf("shop/ops revisions %+v: want a second one, from %s", revs, second)
	}
}

func TestGitOpsCommitToATemplateAloneAppliesTheEnvironmentsUsingIt(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	files := w.path("files")
	tmpl := strings.ReplaceAll(webTemplate, "FILES", files)
	repo := newGitRepo(t, map[string]string{
		"modules/file/main.tf": fileModule,
		"templates/web.yaml":   tmpl,
		"envs/dev.yaml":        templatedEnv("dev", "{tier: dev, size: 2}", ""),
		"envs/prod.yaml":       templatedEnv("prod", "{tier: prod, size: 5}", ""),
	})
	first := git(t, repo.work, "rev-parse", "HEAD")
	w.loggingTofu()
	s := w.startServer(gitServerArgs(repo)...)
	for _, env := range []string{"shop/dev", "shop/prod"} {
		s.eventually(env+" applied from the first commit", func() bool { return s.appliedFrom(env, first) })
	}
	w.toolRuns()

	// Only the template changes, outside the watched envs/ folder.
	second := repo.commit("template: app says count", map[string]string{
		"templates/web.yaml": strings.Replace(tmpl, `"size ${param.size}"`, `"count ${param.size}"`, 1)})
	for _, env := range []string{"shop/dev", "shop/prod"} {
		s.eventually(env+" applied from the template's commit", func() bool { return s.appliedFrom(env, second) })
	}
	if got := w.read("files/prod-app.txt"); got != "count 5" {
		t.Errorf("prod-app.txt = %q, want count 5", got)
	}
	applies := map[string]int{}
	for _, run := range w.toolRuns() {
		if f := strings.Fields(run); f[1] == "apply" {
			applies[f[0]]++
		}
	}
	if applies["app"] != 2 || applies["web"] != 0 {
		t.Errorf("tool applies after the template's commit: %v; want app twice (once per environment), web never", applies)
	}
}
