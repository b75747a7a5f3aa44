package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"knit.dev/knit/internal/spec"
)

// knitTerragrunt is tools/knit-terragrunt, built once beside knitBin
// (where knit looks for it first), as make build builds it.
var knitTerragrunt struct {
	once sync.Once
	err  error
	out  string
}

func requireKnitTerragrunt(t *testing.T) {
	t.Helper()
	knitTerragrunt.once.Do(func() {
		cmd := exec.Command("go", "build", "-trimpath", "-o", filepath.Join(filepath.Dir(knitBin), "knit-terragrunt"), ".")
		cmd.Dir = filepath.Join(repo, "tools", "knit-terragrunt")
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		out, err := cmd.CombinedOutput()
		knitTerragrunt.err, knitTerragrunt.out = err, string(out)
	})
	if knitTerragrunt.err != nil {
		t.Fatalf("build tools/knit-terragrunt: %v\n%s", knitTerragrunt.err, knitTerragrunt.out)
	}
}

// liveTree copies testdata/terragrunt/live into the world as live/, its
// modules served from a git repository over file:// tagged v0.8.0.
func liveTree(t *testing.T, w *world) {
	t.Helper()
	mods := map[string]string{}
	src := filepath.Join(repo, "testdata", "terragrunt")
	for _, m := range []string{"mysql", "webserver-cluster"} {
		b, err := os.ReadFile(filepath.Join(src, "modules", m, "main.tf"))
		if err != nil {
			t.Fatal(err)
		}
		mods[m+"/main.tf"] = string(b)
	}
	r := newGitRepo(t, mods)
	git(t, r.work, "tag", "v0.8.0")
	git(t, r.work, "push", "-q", "origin", "v0.8.0")
	copySubst(t, filepath.Join(src, "live"), w.path("live"), map[string]string{"@MODULES@": "file://" + r.bare})
}

// copySubst copies the folder from to to, replacing in every file each key
// of subst by its value.
func copySubst(t *testing.T, from, to string, subst map[string]string) {
	t.Helper()
	err := filepath.WalkDir(from, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(from, p)
		dst := filepath.Join(to, rel)
		if d.IsDir() {
			return os.MkdirAll(dst, 0o755)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		s := string(b)
		for k, v := range subst {
			s = strings.ReplaceAll(s, k, v)
		}
		return os.WriteFile(dst, []byte(s), 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// loadImported reads an environment file the import wrote.
func loadImported(t *testing.T, path string) *spec.Environment {
	t.Helper()
	env, diags := spec.Load(path)
	if err := diags.Err(); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return env
}

func variable(t *testing.T, c *spec.Component, name string) spec.Variable {
	t.Helper()
	for _, v := range c.Variables {
		if v.Name == name {
			return v
		}
	}
	t.Fatalf("component %s has no variable %s: %+v", c.Name, name, c.Variables)
	return spec.Variable{}
}

// A tree shaped like Terragrunt's live example becomes one environment per
// environment folder that validates; inputs from root.hcl, _envcommon and
// the unit arrive with Terragrunt's precedence, the dependency becomes
// valueFrom, and the mock outputs are reported, not copied. The imported
// qa environment then applies with the real tofu, the module fetched from
// git at its tag and the webserver fed the database's real outputs.
func TestImportTerragruntLiveExample(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	requireKnitTerragrunt(t)
	liveTree(t, w)

	r := w.ok("import", "terragrunt", "live")
	for _, e := range []string{"qa", "stage", "prod"} {
		if !strings.Contains(r.stdout, "environment live/"+e+" ") {
			t.Errorf("report names no environment %s:\n%s", e, r.stdout)
		}
		w.ok("validate", "-f", "live/"+e+".yaml")
	}
	if !strings.Contains(r.stdout, `_envcommon/webserver-cluster.hcl:12: dependency mysql mock_outputs: not copied: {"address":"mock-address"}`) {
		t.Errorf("mock outputs not reported with their file:line:\n%s", r.stdout)
	}

	// A second import replaces nothing without --force, and writes nothing.
	before := w.read("live/qa.yaml")
	if err := os.WriteFile(w.path("live/qa.yaml"), []byte("# edited by hand\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if again := w.knit("import", "terragrunt", "live"); again.code != 1 || !strings.Contains(again.stderr, "exists: the import replaces no file unless --force is given") || w.read("live/qa.yaml") != "# edited by hand\n" {
		t.Errorf("second import: exit %d, %s; qa.yaml %q", again.code, again.stderr, w.read("live/qa.yaml"))
	}
	w.ok("import", "terragrunt", "live", "--force")
	if w.read("live/qa.yaml") != before {
		t.Error("import --force did not write the same qa.yaml again")
	}

	qa := loadImported(t, w.path("live/qa.yaml"))
	db, web := qa.Component("mysql"), qa.Component("webserver-cluster")
	if db == nil || web == nil || len(qa.Spec.Components) != 2 {
		t.Fatalf("qa components: %+v", qa.Spec.Components)
	}
	// unit > _envcommon > root.hcl (whose own inputs merge account, region, env).
	for name, want := range map[string]any{
		"instance_class":    "db.t2.medium",   // the unit's own
		"tier":              "from-envcommon", // _envcommon over root.hcl
		"owner":             "platform",       // root.hcl only
		"allocated_storage": 20.0,             // _envcommon only
		"name":              "mysql_qa",       // _envcommon's locals, env.hcl's environment
		"environment":       "qa",             // env.hcl through root.hcl
		"aws_region":        "us-east-1",      // region.hcl through root.hcl
		"account_name":      "non-prod",       // account.hcl through root.hcl
	} {
		if got := variable(t, db, name).Value; fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("qa mysql %s = %#v, want %#v", name, got, want)
		}
	}
	stage := loadImported(t, w.path("live/stage.yaml"))
	if got := variable(t, stage.Component("mysql"), "instance_class").Value; got != "db.t2.micro" {
		t.Errorf("stage mysql instance_class = %v, want _envcommon's db.t2.micro", got)
	}
	prod := loadImported(t, w.path("live/prod.yaml"))
	if p := prod.Component("mysql"); !p.DestroyProtection || fmt.Sprint(variable(t, p, "allocated_storage").Value) != "100" {
		t.Errorf("prod mysql: destroyProtection %v, allocated_storage %v", p.DestroyProtection, variable(t, p, "allocated_storage").Value)
	}
	if v := variable(t, web, "db_address"); v.ValueFrom != "mysql.address" {
		t.Errorf("db_address = %+v, want valueFrom mysql.address", v)
	}
	if db.Output("address") == nil || db.Output("port") == nil {
		t.Errorf("mysql declares outputs %+v, want address and port", db.Outputs)
	}
	if !strings.HasSuffix(web.Module.Source, "//webserver-cluster?ref=v0.8.0") || !strings.HasPrefix(web.Module.Source, "git::file://") {
		t.Errorf("module source %q: the git ref must be kept", web.Module.Source)
	}
	files := map[string]string{}
	for _, o := range web.OverlayData {
		files[o.Name] = o.Data
	}
	if !strings.Contains(files["provider.tf"], "region us-east-1, account non-prod") || !strings.Contains(files["backend.tf"], `backend "local"`) {
		t.Errorf("generate and remote_state not carried as files: %v", files)
	}

	w.ok("apply", "-f", "live/qa.yaml", "--auto-approve")
	if out := w.ok("output", "live/qa", "webserver-cluster", "url").stdout; !strings.Contains(out, "webserver-qa -> mysql_qa.db.internal:3306") {
		t.Errorf("webserver url = %s, want the database's real address and port", out)
	}
	if _, err := os.Stat(w.path("live/.state/non-prod/us-east-1/qa/mysql/terraform.tfstate")); err != nil {
		t.Errorf("state is not where remote_state put it: %v", err)
	}
}
