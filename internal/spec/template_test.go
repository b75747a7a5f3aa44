package spec

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"knit.dev/knit/internal/diag"
)

// webStack is the template of the issue: a number with a default, a
// required string with an enum, and a module beside the template.
const webStack = `apiVersion: knit.dev/v1
kind: EnvironmentTemplate
metadata: {name: web-stack}
spec:
  parameters:
    - {name: size, type: number, default: 1}
    - {name: tier, type: string, required: true, enum: [dev, prod]}
    - {name: zones, type: list, default: [a, b]}
    - {name: owner, type: string, pattern: "[a-z]+", default: team}
    - {name: public, type: bool, default: false}
  components:
    - name: app
      type: terraform
      module: {source: ../modules/app}
      variables:
        - {name: size, value: "${param.size}"}
        - {name: label, value: "app-${param.tier}"}
        - {name: azs, value: "${param.zones}"}
    - name: net
      type: terraform
      module: {source: ../modules/app}
`

// repo writes files into a git work tree (a .git folder marks it) and
// returns its folder.
func repo(t testing.TB, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	files[".git/HEAD"] = "ref: refs/heads/main\n"
	for name, content := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func loadIn(t *testing.T, dir, file string) (*Environment, diag.Diagnostics) {
	t.Helper()
	t.Chdir(dir)
	return LoadWith(file, Options{RepoRoot: true})
}

const modApp = `variable "size" { default = 0 }
variable "label" { default = "" }
variable "azs" { default = null }
`

func devEnv(params, overrides string) string {
	return `apiVersion: knit.dev/v1
kind: Environment
metadata: {name: shop-dev}
spec:
  teamName: shop
  envName: dev
  template: {path: ../templates/web-stack.yaml}
  parameters: ` + params + `
` + overrides
}

func TestTemplateParametersKeepTheirTypesAndModulesResolveFromTheTemplate(t *testing.T) {
	dir := repo(t, map[string]string{
		"templates/web-stack.yaml": webStack,
		"modules/app/main.tf":      modApp,
		"envs/dev.yaml": devEnv("{tier: dev, size: 2}", `  overrides:
    components:
      - name: app
        variables: [{name: label, value: dev-app}]
`),
	})
	env, ds := loadIn(t, dir, "envs/dev.yaml")
	if ds.HasErrors() {
		t.Fatalf("unexpected problems:\n%s", ds)
	}
	app := env.Component("app")
	if app == nil || len(env.Spec.Components) != 2 {
		t.Fatalf("components: %+v", env.Spec.Components)
	}
	vars := map[string]any{}
	for _, v := range app.Variables {
		vars[v.Name] = v.Value
	}
	if vars["size"] != int64(2) {
		t.Errorf("size = %#v, want the number 2", vars["size"])
	}
	if vars["label"] != "dev-app" {
		t.Errorf("label = %#v, want the override's dev-app", vars["label"])
	}
	if l, ok := vars["azs"].([]any); !ok || len(l) != 2 {
		t.Errorf("azs = %#v, want the default list", vars["azs"])
	}
	src, err := env.ModuleSource(app.Module)
	if err != nil || src.Path != filepath.Join(dir, "modules/app") {
		t.Errorf("module source = %+v, %v; want %s", src, err, filepath.Join(dir, "modules/app"))
	}
	if got := env.Pos("spec.components[0].variables[1].value"); got.File != "envs/dev.yaml" || got.Line != 12 {
		t.Errorf("the override's label is at %s, want envs/dev.yaml:12", got)
	}
	if got := env.Pos("spec.components[0].variables[0].value"); got.File != "templates/web-stack.yaml" || got.Line != 16 {
		t.Errorf("size is at %s, want templates/web-stack.yaml:16", got)
	}
	a := env.Metadata.Annotations[AnnotationTemplate]
	if !strings.HasPrefix(a, "../templates/web-stack.yaml@sha256:") {
		t.Errorf("template annotation = %q", a)
	}
	if env.Spec.Template != nil || env.Spec.Parameters != nil || env.Spec.Overrides != nil {
		t.Error("the resolved environment still carries its template, parameters or overrides")
	}
	// A revision read back resolves the module as loaded.
	body, _ := jsonOf(env)
	back, err := FromJSON(body, env.File, env.Dir)
	if err != nil {
		t.Fatal(err)
	}
	if src, err := back.ModuleSource(back.Component("app").Module); err != nil || src.Path != filepath.Join(dir, "modules/app") {
		t.Errorf("read back, the module source = %+v, %v", src, err)
	}
}

func TestTemplateParameterMistakesAreReportedWhereWritten(t *testing.T) {
	cases := []struct {
		name, params, want string
	}{
		{"unknown", "{tier: dev, sise: 2}", `envs/dev.yaml:8:27: spec.parameters.sise: unknown parameter "sise"`},
		{"missing required", "{size: 2}", `envs/dev.yaml:8:3: spec.parameters: missing required parameter "tier"`},
		{"wrong type", "{tier: dev, size: big}", `envs/dev.yaml:8:27: spec.parameters.size: parameter "size" is a number, found a string`},
		{"pattern", "{tier: dev, owner: Bob1}", `envs/dev.yaml:8:27: spec.parameters.owner: parameter "owner" must match "[a-z]+", found "Bob1"`},
		{"bool", "{tier: dev, public: 1}", `envs/dev.yaml:8:27: spec.parameters.public: parameter "public" is a bool, found a number (1)`},
		{"enum", "{tier: qa}", `envs/dev.yaml:8:16: spec.parameters.tier: parameter "tier" must be one of "dev", "prod", found "qa"`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := repo(t, map[string]string{
				"templates/web-stack.yaml": webStack,
				"modules/app/main.tf":      modApp,
				"envs/dev.yaml":            devEnv(tc.params, ""),
			})
			_, ds := loadIn(t, dir, "envs/dev.yaml")
			if !strings.Contains(ds.String(), tc.want) {
				t.Fatalf("want %q in:\n%s", tc.want, ds)
			}
		})
	}
}

func TestOverrideOfAMissingComponentFailsAtTheOverride(t *testing.T) {
	dir := repo(t, map[string]string{
		"templates/web-stack.yaml": webStack,
		"modules/app/main.tf":      modApp,
		"envs/dev.yaml": devEnv("{tier: dev}", `  overrides:
    components:
      - name: apq
        variables: [{name: label, value: x}]
`),
	})
	_, ds := loadIn(t, dir, "envs/dev.yaml")
	want := `envs/dev.yaml:11:9: spec.overrides.components[0].name: override of component "apq": there is no component "apq" to change`
	if !strings.Contains(ds.String(), want) || !strings.Contains(ds.String(), `did you mean "app"?`) {
		t.Fatalf("want %q in:\n%s", want, ds)
	}
}

func TestOverridesReplaceFieldsAddAndRemoveComponents(t *testing.T) {
	dir := repo(t, map[string]string{
		"templates/web-stack.yaml": webStack,
		"modules/app/main.tf":      modApp,
		"modules/other/main.tf":    modApp,
		"envs/dev.yaml": devEnv("{tier: prod}", `  overrides:
    components:
      - {name: net, remove: true}
      - {name: app, module: {source: ../modules/other}}
      - {name: extra, type: terraform, module: {source: ../modules/app}, dependsOn: [app]}
`),
	})
	env, ds := loadIn(t, dir, "envs/dev.yaml")
	if ds.HasErrors() {
		t.Fatalf("unexpected problems:\n%s", ds)
	}
	var names []string
	for _, c := range env.Spec.Components {
		names = append(names, c.Name)
	}
	if strings.Join(names, ",") != "app,extra" {
		t.Errorf("components %v, want app,extra", names)
	}
	if got := env.Component("app").Module.Source; got != "../modules/other" {
		t.Errorf("app's module %q, want the override's", got)
	}
	if got := env.Component("app").Variables[1].Value; got != "app-prod" {
		t.Errorf("app's label %v, want the template's app-prod", got)
	}
}

const appsEnv = `apiVersion: knit.dev/v1
kind: Environment
metadata: {name: apps}
spec:
  teamName: k8s
  envName: apps
  autoApprove: true
  kubeconfig: {path: ./kube/config, context: apps}
  components:
    - {name: net, type: terraform, module: {source: ./modules/app}, variables: [{name: label, value: apps}]}
    - {name: app, type: terraform, module: {source: ./modules/app}, dependsOn: [net]}
`

func TestExtendsInheritsSettingsAndComponents(t *testing.T) {
	dir := repo(t, map[string]string{
		"envs/apps.yaml":           appsEnv,
		"envs/modules/app/main.tf": modApp,
		"envs/ops/ops.yaml": `apiVersion: knit.dev/v1
kind: Environment
spec:
  envName: ops
  extends: {path: ../apps.yaml}
  overrides:
    components:
      - name: net
        variables: [{name: label, value: ops}]
      - {name: app, variables: [{name: size, value: 3}]}
`,
	})
	env, ds := loadIn(t, dir, "envs/ops/ops.yaml")
	if ds.HasErrors() {
		t.Fatalf("unexpected problems:\n%s", ds)
	}
	if env.ID() != "k8s/ops" || !env.Spec.AutoApprove || env.Metadata.Name != "apps" {
		t.Errorf("id %s autoApprove %v name %q: want k8s/ops inheriting apps' settings", env.ID(), env.Spec.AutoApprove, env.Metadata.Name)
	}
	if got := env.Component("net").Variables[0].Value; got != "ops" {
		t.Errorf("net's label %v, want ops", got)
	}
	if got := env.Component("app").Module.Source; got != "../modules/app" {
		t.Errorf("app's module %q, want it rebased to ../modules/app", got)
	}
	if got := env.Pos("spec.components[1].dependsOn[0]"); got.File != "envs/apps.yaml" || got.Line != 11 {
		t.Errorf("app's dependsOn is at %s, want envs/apps.yaml:11", got)
	}
	if !strings.HasPrefix(env.Metadata.Annotations[AnnotationExtends], "../apps.yaml@sha256:") {
		t.Errorf("extends annotation %q", env.Metadata.Annotations[AnnotationExtends])
	}
	if env.Spec.Kubeconfig == nil || env.Spec.Kubeconfig.Path != "../kube/config" {
		t.Errorf("kubeconfig %+v, want apps' ./kube/config read from ops' folder", env.Spec.Kubeconfig)
	}
	if len(env.Sources) != 1 || env.Sources[0].Path != filepath.Join(dir, "envs/apps.yaml") {
		t.Errorf("sources %+v", env.Sources)
	}
}

func TestExtendsCycleAndDepthAreBounded(t *testing.T) {
	ext := func(env, target string) string {
		return "apiVersion: knit.dev/v1\nkind: Environment\nspec:\n  teamName: t\n  envName: " + env + "\n  extends: {path: " + target + "}\n"
	}
	dir := repo(t, map[string]string{"a.yaml": ext("a", "b.yaml"), "b.yaml": ext("b", "a.yaml")})
	_, ds := loadIn(t, dir, "a.yaml")
	if want := "b.yaml:6:13: spec.extends.path: extends cycle: a.yaml → b.yaml → a.yaml"; !strings.Contains(ds.String(), want) {
		t.Fatalf("want %q in:\n%s", want, ds)
	}
	files := map[string]string{}
	for i := 0; i < 40; i++ {
		files[filepathf("e%d.yaml", i)] = ext(filepathf("e%d", i), filepathf("e%d.yaml", i+1))
	}
	dir = repo(t, files)
	_, ds = loadIn(t, dir, "e0.yaml")
	if !strings.Contains(ds.String(), "extends nests more than 16 files deep") {
		t.Fatalf("a 40-file chain:\n%s", ds)
	}
}

func TestHostileTemplatePaths(t *testing.T) {
	outside := t.TempDir()
	os.WriteFile(filepath.Join(outside, "t.yaml"), []byte(webStack), 0o644)
	dir := repo(t, map[string]string{"modules/app/main.tf": modApp, "templates/dir/x": "", "envs/dev.yaml": devEnv("{tier: dev}", "")})
	os.Symlink(filepath.Join(outside, "t.yaml"), filepath.Join(dir, "templates", "web-stack.yaml"))
	_, ds := loadIn(t, dir, "envs/dev.yaml")
	if !strings.Contains(ds.String(), "is a symlink to "+filepath.Join(outside, "t.yaml")+", outside") {
		t.Errorf("a symlink out of the repository:\n%s", ds)
	}
	for name, make := range map[string]func(p string) error{
		"is a folder": func(p string) error { return os.Mkdir(p, 0o755) },
		"is not a regular file": func(p string) error {
			return syscall.Mkfifo(p, 0o644)
		},
		"is larger than 16 MiB": func(p string) error {
			return os.WriteFile(p, make([]byte, MaxFileSize+10), 0o644)
		},
	} {
		os.Remove(filepath.Join(dir, "templates", "web-stack.yaml"))
		os.RemoveAll(filepath.Join(dir, "templates", "web-stack.yaml"))
		if err := make(filepath.Join(dir, "templates", "web-stack.yaml")); err != nil {
			t.Fatal(err)
		}
		_, ds := loadIn(t, dir, "envs/dev.yaml")
		if !strings.Contains(ds.String(), "envs/dev.yaml:7:") || !strings.Contains(ds.String(), name) {
			t.Errorf("%s: want an error at spec.template:\n%s", name, ds)
		}
	}
	// Without a git work tree, a template may not leave the file's folder.
	plain := t.TempDir()
	os.MkdirAll(filepath.Join(plain, "envs"), 0o755)
	os.WriteFile(filepath.Join(plain, "envs/dev.yaml"), []byte(devEnv("{tier: dev}", "")), 0o644)
	_, ds = loadIn(t, plain, "envs/dev.yaml")
	if !strings.Contains(ds.String(), "leaves the environment's folder") {
		t.Errorf("a template outside the folder, no git work tree:\n%s", ds)
	}
}

func filepathf(format string, a ...any) string { return fmt.Sprintf(format, a...) }

func jsonOf(env *Environment) ([]byte, error) { return json.Marshal(env) }

func TestATemplatesOwnMistakesAreReportedInTheTemplate(t *testing.T) {
	bad := strings.Replace(webStack, "      module: {source: ../modules/app}\n      variables:", "      module: {source: ../modules/app}\n      dependsOn: [nope]\n      colour: red\n      variables:", 1)
	bad = strings.Replace(bad, `"app-${param.tier}"`, `"app-${param.teir}"`, 1)
	dir := repo(t, map[string]string{
		"templates/web-stack.yaml": bad,
		"modules/app/main.tf":      modApp,
		"envs/dev.yaml":            devEnv("{tier: dev}", ""),
	})
	_, ds := loadIn(t, dir, "envs/dev.yaml")
	for _, want := range []string{
		`templates/web-stack.yaml:16:7: spec.components[0].colour: unknown field "colour"`,
		`templates/web-stack.yaml:15:19: spec.components[0].dependsOn[0]: component "nope" does not exist`,
		`templates/web-stack.yaml:19:32: ${param.teir}: the template declares no parameter "teir"`,
	} {
		if !strings.Contains(ds.String(), want) {
			t.Errorf("want %q in:\n%s", want, ds)
		}
	}
}

// A template names no template and extends nothing, so no chain of
// templates (through git or not) can loop.
func TestATemplateCannotUseATemplateOrExtend(t *testing.T) {
	looping := strings.Replace(webStack, "spec:\n", "spec:\n  template: {path: ./web-stack.yaml}\n  extends: {path: ../envs/dev.yaml}\n", 1)
	dir := repo(t, map[string]string{
		"templates/web-stack.yaml": looping,
		"modules/app/main.tf":      modApp,
		"envs/dev.yaml":            devEnv("{tier: dev}", ""),
	})
	_, ds := loadIn(t, dir, "envs/dev.yaml")
	for _, want := range []string{
		`templates/web-stack.yaml:5:3: spec.template: unknown field "template"`,
		`templates/web-stack.yaml:6:3: spec.extends: unknown field "extends"`,
	} {
		if !strings.Contains(ds.String(), want) {
			t.Errorf("want %q in:\n%s", want, ds)
		}
	}
}

// A list parameter referenced many times cannot blow up like an alias bomb.
func TestParameterReferencesAreBounded(t *testing.T) {
	var refs strings.Builder
	for i := 0; i < 200; i++ {
		fmt.Fprintf(&refs, "        - {name: v%d, value: \"${param.zones}\"}\n", i)
	}
	tmpl := strings.Replace(webStack, "      variables:\n", "      variables:\n"+refs.String(), 1)
	zones := "[" + strings.Repeat("a, ", 2000) + "a]"
	dir := repo(t, map[string]string{
		"templates/web-stack.yaml": tmpl,
		"modules/app/main.tf":      modApp,
		"envs/dev.yaml":            devEnv("{tier: dev, zones: "+zones+"}", ""),
	})
	_, ds := loadIn(t, dir, "envs/dev.yaml")
	if !strings.Contains(ds.String(), "the template's parameter references expand to too many values") {
		t.Fatalf("200 references to a 2,001-element list:\n%s", ds)
	}
}

// A template validates on its own: its defaults, a placeholder for each
// required parameter, its mistakes at their lines.
func TestCheckTemplateOnItsOwn(t *testing.T) {
	dir := repo(t, map[string]string{"templates/web-stack.yaml": webStack, "modules/app/main.tf": modApp})
	t.Chdir(dir)
	env, ds := CheckTemplate("templates/web-stack.yaml", Options{RepoRoot: true})
	if ds.HasErrors() || len(env.Spec.Components) != 2 {
		t.Fatalf("a good template: %d components,\n%s", len(env.Spec.Components), ds)
	}
	bad := strings.Replace(webStack, "      type: terraform\n", "      type: terraform\n      dependsOn: [nope]\n", 1)
	os.WriteFile("templates/web-stack.yaml", []byte(bad), 0o644)
	_, ds = CheckTemplate("templates/web-stack.yaml", Options{RepoRoot: true})
	if want := `templates/web-stack.yaml:14:19: spec.components[0].dependsOn[0]: component "nope" does not exist`; ds.String() != want {
		t.Errorf("got\n%s\nwant\n%s", ds, want)
	}
}

// A template checked on its own gives each parameter without a value a
// placeholder; what only a placeholder makes wrong (a module folder
// app-x, a URL "x") is a warning saying so, while a mistake of the
// template's own text on the same line stays an error.
func TestCheckTemplateWarnsOfWhatOnlyAPlaceholderMakesWrong(t *testing.T) {
	tmpl := `apiVersion: knit.dev/v1
kind: EnvironmentTemplate
metadata: {name: web}
spec:
  parameters:
    - {name: version, type: string}
    - {name: health, type: string, required: true}
  components:
    - name: app
      type: terraform
      module: {source: "./modules/app-${param.version}"}
      health:
        - {name: ok, http: {url: "${param.health}", expectStatus: 200}}
        - {name: typo, http: {url: "${param.health}", expectStatuss: 200}}
`
	dir := repo(t, map[string]string{"templates/web.yaml": tmpl, "templates/modules/app-1/main.tf": modApp})
	t.Chdir(dir)
	_, ds := CheckTemplate("templates/web.yaml", Options{RepoRoot: true})
	want := []string{
		`templates/web.yaml:11:16: warning: spec.components[0].module.source: module folder "./modules/app-x" does not exist` +
			"\n    hint: paths are relative to the environment file's folder; made with a placeholder for ${param.version}; each environment using the template is checked with its own value",
		`templates/web.yaml:13:29: warning: spec.components[0].health[0].http.url: "x" is not an http or https URL`,
		`templates/web.yaml:14:55: spec.components[0].health[1].http.expectStatuss: unknown field "expectStatuss"`,
	}
	for _, w := range want {
		if !strings.Contains(ds.String(), w) {
			t.Errorf("missing\n%s\nin\n%s", w, ds)
		}
	}
	if n := len(ds.Errors()); n != 1 {
		t.Errorf("%d errors, want 1 (the typo):\n%s", n, ds)
	}
}

// TestExtendsSetsTheBasesTemplateParameters (issue 37 item 8): prod is
// staging with a bigger size: its spec.parameters go to the template
// staging uses, through another extends too; a wrong value is reported
// in prod's file; parameters over a base without a template are an error.
func TestExtendsSetsTheBasesTemplateParameters(t *testing.T) {
	staging := devEnv("{tier: prod, size: 2}", "")
	prod := func(params string) string {
		return "apiVersion: knit.dev/v1\nkind: Environment\nspec:\n  envName: prod\n  extends: {path: ./staging.yaml}\n  parameters: " + params + "\n"
	}
	dir := repo(t, map[string]string{
		"templates/web-stack.yaml": webStack,
		"modules/app/main.tf":      modApp,
		"envs/staging.yaml":        staging,
		"envs/prod.yaml":           prod("{size: 3}"),
		"envs/bad.yaml":            prod("{size: three}"),
		"envs/top.yaml":            "apiVersion: knit.dev/v1\nkind: Environment\nspec:\n  envName: top\n  extends: {path: ./prod.yaml}\n  parameters: {owner: ops}\n",
		"envs/plain.yaml":          appsEnv,
		"envs/onplain.yaml":        "apiVersion: knit.dev/v1\nkind: Environment\nspec:\n  envName: x\n  extends: {path: ./plain.yaml}\n  parameters: {size: 3}\n",
	})
	env, ds := loadIn(t, dir, "envs/prod.yaml")
	if ds.HasErrors() {
		t.Fatalf("prod:\n%s", ds)
	}
	if got := env.Component("app").Variables[0].Value; fmt.Sprint(got) != "3" {
		t.Errorf("prod's app size %v, want 3 (its parameter over staging's 2)", got)
	}
	if got := env.Component("app").Variables[1].Value; got != "app-prod" {
		t.Errorf("prod's app label %v, want staging's tier", got)
	}
	env, ds = loadIn(t, dir, "envs/top.yaml")
	if ds.HasErrors() || fmt.Sprint(env.Component("app").Variables[0].Value) != "3" {
		t.Fatalf("two extends deep: %v\n%s", env, ds)
	}
	_, ds = loadIn(t, dir, "envs/bad.yaml")
	if want := "envs/bad.yaml:6:"; !strings.Contains(ds.String(), want) || !strings.Contains(ds.String(), "size") {
		t.Errorf("a wrong parameter over a base's template: want it at %s…\n%s", want, ds)
	}
	_, ds = loadIn(t, dir, "envs/onplain.yaml")
	if !strings.Contains(ds.String(), "parameters need a template") || !strings.Contains(ds.String(), "plain.yaml") {
		t.Errorf("parameters over a base without a template:\n%s", ds)
	}
}
