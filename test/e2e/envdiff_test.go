package e2e

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// greetModule declares a sensitive variable whose name says nothing: only
// the module tells knit it is a secret.
const greetModule = `
variable "greeting" {
  type      = string
  sensitive = true
}
variable "size" { type = number }
output "size" { value = var.size }
output "hello" {
  value     = var.greeting
  sensitive = true
}
`

const devGreeting, prodGreeting = "dev-Greeting-7f3a9", "prod-Greeting-c41e2"

func stageFile(name, repo, version, size, greeting, extra string) string {
	return fmt.Sprintf(`apiVersion: knit.dev/v1
kind: Environment
metadata: {name: %[1]s}
spec:
  teamName: shop
  envName: %[1]s
  autoApprove: true
  components:
    - name: app
      type: terraform
      module: {source: "git::file://%[2]s", version: %[3]s}
      outputs: [{name: size}, {name: hello, sensitive: true}]
%[6]s      variables:
        - {name: size, value: %[4]s}
        - {name: greeting, value: %[5]s}
`, name, repo, version, size, greeting, extra)
}

// TestDiffDevAndProd: two environments applied with real OpenTofu from two
// tags of one git module: knit diff lists the version and variable
// differences A → B, masks the variable the module declares sensitive on
// both sides (the secrets appear nowhere), shows live outputs side by side,
// answers the same through a server, refuses another team's token alike
// for an existing and a missing environment, and an unknown one is an
// error with exit 1.
func TestDiffDevAndProd(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	src := w.path("src/mod")
	w.write(map[string]string{"src/mod/main.tf": greetModule})
	git(t, src, "init", "-q", "-b", "main")
	git(t, src, "add", ".")
	git(t, src, "commit", "-q", "-m", "v1")
	git(t, src, "tag", "v1")
	w.write(map[string]string{"src/mod/main.tf": greetModule + "# v2\n"})
	git(t, src, "commit", "-q", "-am", "v2")
	git(t, src, "tag", "v2")
	git(t, w.dir, "clone", "-q", "--bare", src, w.path("mod.git"))
	w.write(map[string]string{
		"dev.yaml":  stageFile("dev", w.path("mod.git"), "v1", "1", devGreeting, ""),
		"prod.yaml": stageFile("prod", w.path("mod.git"), "v2", "3", prodGreeting, "      destroyProtection: true\n"),
	})
	w.ok("apply", "-f", "dev.yaml")
	w.ok("apply", "-f", "prod.yaml")

	noSecret := func(what string, r result) {
		t.Helper()
		for _, s := range []string{devGreeting, prodGreeting} {
			if strings.Contains(r.stdout+r.stderr, s) {
				t.Fatalf("%s printed a secret:\n%s%s", what, r.stdout, r.stderr)
			}
		}
	}
	js := w.ok("diff", "dev", "prod", "-o", "json")
	noSecret("knit diff -o json", js)
	var d struct {
		A, B       struct{ Env string }
		Components []struct {
			Name, Change string
			Fields       []struct {
				Field, Missing string
				A, B           any
				Sensitive      bool
			}
			Outputs []struct {
				Name      string
				A, B      any
				Sensitive bool
			}
		}
	}
	if err := json.Unmarshal([]byte(js.stdout), &d); err != nil {
		t.Fatalf("%v\n%s", err, js.stdout)
	}
	if d.A.Env != "shop/dev" || d.B.Env != "shop/prod" || len(d.Components) != 1 || d.Components[0].Change != "changed" {
		t.Fatalf("diff:\n%s", js.stdout)
	}
	var fields, outs []string
	for _, f := range d.Components[0].Fields {
		fields = append(fields, fmt.Sprintf("%s=%v>%v/%v", f.Field, f.A, f.B, f.Sensitive))
	}
	for _, o := range d.Components[0].Outputs {
		outs = append(outs, fmt.Sprintf("%s=%v|%v", o.Name, o.A, o.B))
	}
	if got, want := strings.Join(fields, " "), "module.version=v1>v2/false destroyProtection=false>true/false variables.size=1>3/false variables.greeting=(sensitive)>(sensitive)/true"; got != want {
		t.Errorf("fields:\n got %s\nwant %s", got, want)
	}
	if got, want := strings.Join(outs, " "), "hello=(sensitive)|(sensitive) size=1|3"; got != want {
		t.Errorf("outputs: got %s, want %s", got, want)
	}

	human := w.ok("diff", "shop/dev", "shop/prod")
	noSecret("knit diff", human)
	for _, want := range []string{"Making shop/dev (revision 1, applied) look like shop/prod (revision 1, applied) would change",
		`    module.version: "v1" → "v2"`, "    variables.greeting: (sensitive) → (sensitive)", "    ~ size: 1 | 3"} {
		if !strings.Contains(human.stdout, want) {
			t.Errorf("knit diff lacks %q:\n%s", want, human.stdout)
		}
	}
	if r := w.knit("diff", "dev", "nope"); r.code != 1 || !strings.Contains(r.stderr, `no environment "nope"`) {
		t.Errorf("unknown environment: exit %d\n%s", r.code, r.stderr)
	}

	// Through a server, with a token of team shop: the same answer.
	s := w.startServer()
	shop := strings.TrimSpace(w.ok("token", "create", "shop-ci", "--role", "viewer", "--team", "shop").stdout)
	pay := strings.TrimSpace(w.ok("token", "create", "pay-ci", "--role", "viewer", "--team", "pay").stdout)
	r := w.knitWith([]string{"KNIT_SERVER=" + s.url, "KNIT_TOKEN=" + shop}, "diff", "shop/dev", "shop/prod", "-o", "json")
	noSecret("knit diff --server", r)
	if r.code != 0 || r.stdout != js.stdout {
		t.Errorf("through the server (exit %d):\n%s%s\nlocally:\n%s", r.code, r.stdout, r.stderr, js.stdout)
	}
	// Another team's token: refused alike, existing or not.
	exists := w.knitWith([]string{"KNIT_SERVER=" + s.url, "KNIT_TOKEN=" + pay}, "diff", "shop/dev", "shop/prod")
	ghost := w.knitWith([]string{"KNIT_SERVER=" + s.url, "KNIT_TOKEN=" + pay}, "diff", "shop/ghost", "shop/prod")
	if exists.code != 1 || ghost.code != 1 || strings.Replace(ghost.stderr, "ghost", "dev", -1) != exists.stderr ||
		!strings.Contains(exists.stderr, "another team") || exists.stdout != "" {
		t.Errorf("another team's token: exit %d / %d\n%s\n%s", exists.code, ghost.code, exists.stderr, ghost.stderr)
	}
}
