package knit_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"knit.dev/knit/internal/adapters"
	"knit.dev/knit/internal/knit"
	"knit.dev/knit/internal/runner"
	"knit.dev/knit/internal/runner/fake"
	"knit.dev/knit/internal/spec"
	"knit.dev/knit/internal/store"
	"knit.dev/knit/internal/view"
)

// stageDoc is one environment of a shop: dev and prod differ in the
// module's version, a variable, a sensitive variable (the module declares
// it), a dependency, protection and one component each.
const stageDoc = `apiVersion: knit.dev/v1
kind: Environment
metadata: {name: NAME}
spec:
  teamName: TEAM
  envName: NAME
  autoApprove: true
  components:
    - name: net
      type: terraform
      module: {source: ./modules/net}
      variables:
        - {name: db_pass, value: PASS}
        - {name: size, value: SIZE}
      outputs: [{name: id}, {name: key, sensitive: true}]
    - name: app
      type: terraform
      module: {source: terraform-aws-modules/vpc/aws, version: VERSION}
      dependsOn: [DEPS]
      destroyProtection: PROTECT
      variables:
        - {name: api_token, value: PASS}
EXTRA`

const netModule = `variable "db_pass" {
  type      = string
  sensitive = true
}
variable "size" { type = number }
output "id" { value = "x" }
output "key" { value = "y" }
`

type stage struct{ team, name, pass, size, version, deps, protect, extra string }

func (s stage) write(t *testing.T, dir string) *spec.Environment {
	t.Helper()
	if err := os.MkdirAll(filepath.Join(dir, "modules", "net"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "modules", "net", "main.tf"), []byte(netModule), 0o644); err != nil {
		t.Fatal(err)
	}
	d := strings.NewReplacer("TEAM", s.team, "NAME", s.name, "PASS", s.pass, "SIZE", s.size, "VERSION", s.version,
		"DEPS", s.deps, "PROTECT", s.protect, "EXTRA", s.extra).Replace(stageDoc)
	env, diags := spec.Parse("env.yaml", dir, []byte(d))
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	return env
}

const devSecret, prodSecret = "dev-hunter2-secret", "prod-correct-horse"

func openDiff(t *testing.T) *knit.Knit {
	t.Helper()
	r := &fake.Runner{OutputsFor: func(name string, in runner.Inputs) runner.Outputs {
		if name == "net" {
			return runner.Outputs{"id": {Value: "net-" + string(mustJSON(in["size"]))}, "key": {Value: in["db_pass"], Sensitive: true}}
		}
		return nil
	}}
	k, err := adapters.Open(context.Background(), adapters.Config{Config: knit.Config{DataDir: t.TempDir(),
		Runners: map[string]runner.Runner{spec.TypeTerraform: r, spec.TypeScript: r}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { k.Close() })
	return k
}

func mustJSON(v any) []byte {
	b, _ := json.Marshal(v)
	return b
}

func fieldOf(c view.ComponentDiff, name string) (view.FieldDiff, bool) {
	for _, f := range c.Fields {
		if f.Field == name {
			return f, true
		}
	}
	return view.FieldDiff{}, false
}

func componentOf(d knit.EnvDiff, name string) view.ComponentDiff {
	for _, c := range d.Components {
		if c.Name == name {
			return c
		}
	}
	return view.ComponentDiff{}
}

func applyStages(t *testing.T, k *knit.Knit) {
	t.Helper()
	dev := stage{"shop", "dev", devSecret, "1", "5.0.0", "net", "false",
		"    - {name: cache, type: script, script: {apply: \"true\"}}\n"}.write(t, t.TempDir())
	prod := stage{"shop", "prod", prodSecret, "3", "5.1.0", "", "true", ""}.write(t, t.TempDir())
	for _, env := range []*spec.Environment{dev, prod} {
		if res := apply(t, k, env, "alice", true); res.Status != store.StatusSucceeded {
			t.Fatalf("apply %s: %s", env.ID(), res.Status)
		}
	}
}

func TestDiffOfTwoEnvironmentsNamesEveryDifferenceAndMasksSecrets(t *testing.T) {
	ctx := context.Background()
	k := openDiff(t)
	applyStages(t, k)

	d, err := knit.NewRecords(k).DiffEnvironments(ctx, knit.EnvDiffRequest{A: "shop/dev", B: "prod"})
	if err != nil {
		t.Fatal(err)
	}
	if d.A.Env != "shop/dev" || d.B.Env != "shop/prod" || !d.A.Applied || d.A.Revision != 1 || d.Same {
		t.Fatalf("sides %+v %+v same=%v", d.A, d.B, d.Same)
	}
	var names []string
	for _, c := range d.Components {
		names = append(names, c.Name+":"+c.Change)
	}
	if got := strings.Join(names, " "); got != "net:changed app:changed cache:removed" {
		t.Errorf("components %s, want net:changed app:changed cache:removed (B's order, then A's own)", got)
	}
	app, net := componentOf(d, "app"), componentOf(d, "net")
	if f, ok := fieldOf(app, "module.version"); !ok || f.A != "5.0.0" || f.B != "5.1.0" {
		t.Errorf("module.version %+v", f)
	}
	if f, ok := fieldOf(app, "destroyProtection"); !ok || f.A != false || f.B != true {
		t.Errorf("destroyProtection %+v", f)
	}
	if f, ok := fieldOf(app, "dependsOn"); !ok || f.Missing != "b" {
		t.Errorf("dependsOn %+v", f)
	}
	if f, ok := fieldOf(net, "variables.size"); !ok || string(mustJSON(f.A)) != "1" || string(mustJSON(f.B)) != "3" || f.Sensitive {
		t.Errorf("variables.size %+v", f)
	}
	// Declared sensitive by the module; named like a credential.
	for _, c := range []struct{ comp, field string }{{"net", "variables.db_pass"}, {"app", "variables.api_token"}} {
		f, ok := fieldOf(componentOf(d, c.comp), c.field)
		if !ok || !f.Sensitive || f.A != knit.Masked || f.B != knit.Masked {
			t.Errorf("%s.%s = %+v, want masked on both sides", c.comp, c.field, f)
		}
	}
	// Outputs side by side: the sensitive one masked (its values differ).
	var outs []string
	for _, o := range net.Outputs {
		outs = append(outs, o.Name+"="+string(mustJSON(o.A))+"|"+string(mustJSON(o.B)))
	}
	if got := strings.Join(outs, " "); got != `id="net-1"|"net-3" key="(sensitive)"|"(sensitive)"` {
		t.Errorf("outputs %s", got)
	}
	if b := mustJSON(d); strings.Contains(string(b), devSecret) || strings.Contains(string(b), prodSecret) {
		t.Fatalf("a secret leaked into the diff:\n%s", b)
	}

	// The other way round, the direction flips.
	r, err := knit.NewRecords(k).DiffEnvironments(ctx, knit.EnvDiffRequest{A: "shop/prod", B: "shop/dev"})
	if err != nil {
		t.Fatal(err)
	}
	if c := componentOf(r, "cache"); c.Change != view.ComponentAdded {
		t.Errorf("prod → dev: cache %+v, want added", c)
	}
	// One environment against itself: nothing differs.
	if s, err := knit.NewRecords(k).DiffEnvironments(ctx, knit.EnvDiffRequest{A: "shop/dev", B: "shop/dev"}); err != nil || !s.Same {
		t.Errorf("dev vs dev: same=%v %v", s.Same, err)
	}
}

func TestDiffBetweenRevisionsOfOneEnvironment(t *testing.T) {
	ctx := context.Background()
	k := openDiff(t)
	dir := t.TempDir()
	v1 := stage{"shop", "dev", devSecret, "1", "5.0.0", "net", "false", ""}.write(t, dir)
	v2 := stage{"shop", "dev", prodSecret, "2", "5.0.0", "net", "false", ""}.write(t, dir)
	apply(t, k, v1, "alice", true)
	apply(t, k, v2, "alice", true)
	d, err := knit.NewRecords(k).DiffEnvironments(ctx, knit.EnvDiffRequest{A: "shop/dev", ARev: 1, B: "shop/dev", BRev: 2})
	if err != nil {
		t.Fatal(err)
	}
	net := componentOf(d, "net")
	if d.A.Revision != 1 || d.B.Revision != 2 || d.A.Applied || !d.B.Applied || net.Change != view.ComponentChanged ||
		len(net.Fields) != 2 || net.Outputs != nil {
		t.Fatalf("revisions 1→2: %+v %+v %+v", d.A, d.B, net)
	}
	if b := mustJSON(d); strings.Contains(string(b), devSecret) || strings.Contains(string(b), prodSecret) {
		t.Fatalf("a secret leaked into the diff:\n%s", b)
	}
	if _, err := knit.NewRecords(k).DiffEnvironments(ctx, knit.EnvDiffRequest{A: "shop/dev", ARev: 1, B: "shop/dev", BRev: 9}); err == nil ||
		!strings.Contains(err.Error(), "shop/dev has no revision 9") {
		t.Errorf("unknown revision: %v", err)
	}
}

func TestDiffOfAnUnknownOrForeignEnvironmentIsRefusedAlike(t *testing.T) {
	ctx := context.Background()
	k := openDiff(t)
	applyStages(t, k)
	if _, err := knit.NewRecords(k).DiffEnvironments(ctx, knit.EnvDiffRequest{A: "shop/dev", B: "shop/nope"}); !errors.Is(err, knit.ErrNotFound) ||
		!strings.Contains(err.Error(), "shop/nope") {
		t.Errorf("unknown env: %v", err)
	}
	// A token of team pay: shop's environments are refused, existing or
	// not, in words that do not tell which.
	pay := knit.WithCaller(ctx, view.Token{Name: "pay-ci", Role: store.RoleViewer, Teams: []string{"pay"}})
	_, errExists := knit.NewRecords(k).DiffEnvironments(pay, knit.EnvDiffRequest{A: "shop/dev", B: "shop/prod"})
	_, errMissing := knit.NewRecords(k).DiffEnvironments(pay, knit.EnvDiffRequest{A: "shop/ghost", B: "shop/prod"})
	if !errors.Is(errExists, knit.ErrForbidden) || !errors.Is(errMissing, knit.ErrForbidden) ||
		strings.Replace(errMissing.Error(), "ghost", "dev", 1) != errExists.Error() {
		t.Errorf("foreign envs: %v / %v", errExists, errMissing)
	}
}

// helmStage is a helm component whose values hold a password, with a
// cluster token, and a script component whose map variable hides one.
const helmStage = `apiVersion: knit.dev/v1
kind: Environment
metadata: {name: NAME}
spec:
  teamName: shop
  envName: NAME
  autoApprove: true
  components:
    - name: web
      type: helm
      chart: {repo: "https://charts.example.com", name: web, version: VERSION, values: {image: {tag: "TAG"}, auth: {adminPassword: PASS}}}
      kubeconfig: {server: {value: "https://k8s.example.com"}, token: {value: TOKEN}}
    - name: job
      type: script
      script: {apply: "true"}
      variables:
        - {name: config, value: {db: {host: h, password: PASS}}}
`

func TestDiffMasksChartValuesTokensAndNestedSecrets(t *testing.T) {
	ctx := context.Background()
	r := &fake.Runner{}
	k, err := adapters.Open(ctx, adapters.Config{Config: knit.Config{DataDir: t.TempDir(),
		Runners: map[string]runner.Runner{spec.TypeHelm: r, spec.TypeScript: r}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { k.Close() })
	for _, s := range [][5]string{{"dev", "1.0.0", "v1", "dev-Pa55-x1", "dev-Tok-x1"}, {"prod", "1.2.0", "v2", "prod-Pa55-y2", "prod-Tok-y2"}} {
		doc := strings.NewReplacer("NAME", s[0], "VERSION", s[1], "TAG", s[2], "PASS", s[3], "TOKEN", s[4]).Replace(helmStage)
		apply(t, k, parse(t, doc), "alice", true)
	}
	d, err := knit.NewRecords(k).DiffEnvironments(ctx, knit.EnvDiffRequest{A: "shop/dev", B: "shop/prod"})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, c := range d.Components {
		for _, f := range c.Fields {
			got = append(got, c.Name+"."+f.Field+"="+string(mustJSON(f.A))+">"+string(mustJSON(f.B)))
		}
	}
	want := `web.chart.version="1.0.0">"1.2.0" web.chart.values.auth.adminPassword="(sensitive)">"(sensitive)" ` +
		`web.chart.values.image.tag="v1">"v2" web.kubeconfig.token="(sensitive)">"(sensitive)" job.variables.config="(sensitive)">"(sensitive)"`
	if strings.Join(got, " ") != want {
		t.Errorf("fields:\n got %s\nwant %s", strings.Join(got, " "), want)
	}
	if b := string(mustJSON(d)); strings.Contains(b, "Pa55") || strings.Contains(b, "Tok-") {
		t.Fatalf("a secret leaked:\n%s", b)
	}
}

func TestParseDiffIDTakesTeamSlashEnvOnly(t *testing.T) {
	for in, want := range map[string]string{"shop/dev": "shop/dev 0", "shop/dev@3": "shop/dev 3", "dev": "error", "shop/dev@0": "error",
		"shop/": "error", "/dev": "error", "a/b/c": "error", "shop/dev@x": "error"} {
		ref, rev, err := knit.ParseDiffID(in)
		got := ref + " " + strconv.Itoa(rev)
		if err != nil {
			got = "error"
		}
		if got != want {
			t.Errorf("ParseDiffID(%q) = %s, want %s", in, got, want)
		}
	}
}

func TestDiffOfAnInvalidRevisionSaysSoAndTheAppliedOneStillServes(t *testing.T) {
	ctx := context.Background()
	k := openDiff(t)
	applyStages(t, k)
	rec, err := knit.NewRecords(k).EnvironmentRecord(ctx, "shop/dev")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := knit.NewRecordInvalid(k, store.Environment(rec), store.Revision{Source: "env.yaml", Hash: "bad", Spec: []byte("spec: [\n"),
		Errors: "env.yaml:3:1: spec: not a mapping\nenv.yaml:4:1: more"}, "git").Run(ctx); err != nil {
		t.Fatal(err)
	}
	_, err = knit.NewRecords(k).DiffEnvironments(ctx, knit.EnvDiffRequest{A: "shop/dev", ARev: 2, B: "shop/prod"})
	if err == nil || !strings.Contains(err.Error(), "shop/dev revision 2 does not validate (env.yaml:3:1: spec: not a mapping)") {
		t.Errorf("invalid revision: %v", err)
	}
	// Without a revision, a side is the applied one, not the newest.
	if d, err := knit.NewRecords(k).DiffEnvironments(ctx, knit.EnvDiffRequest{A: "shop/dev", B: "shop/prod"}); err != nil || d.A.Revision != 1 || d.A.Latest != 2 {
		t.Errorf("dev side %+v, %v: want the applied revision 1 (latest 2)", d.A, err)
	}
}
