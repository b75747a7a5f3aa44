package spec

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func symlink(t *testing.T, target, link string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(link), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
}

// Every local path an environment names is refused when a symlink on it
// leads out of the environment's folder; the error names the link and its
// target. The lexical check alone let `module: {source: ./leak}`, with leak
// a link to the data dir, copy every other team's work dir.
func TestSymlinksOutOfTheEnvironmentAreRefused(t *testing.T) {
	outside := t.TempDir() // stands for knit's data dir
	for _, f := range []string{"main.tf", "secret.tfvars", "Chart.yaml", "values.yaml", "deploy.yaml"} {
		if err := os.WriteFile(filepath.Join(outside, f), []byte("# outside\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	realOutside, _ := filepath.EvalSymlinks(outside)
	for _, tc := range []struct {
		name, link, target, component, field string
	}{
		{"module", "leak", outside, "{name: a, type: terraform, module: {source: ./leak}}", "module.source"},
		{"module below a linked folder", "modules/shared", outside, "{name: a, type: terraform, module: {source: ./modules/shared}}", "module.source"},
		{"module path through a link", "modules/app/sub2", outside, "{name: a, type: terraform, module: {source: ./modules/app, path: sub2}}", "module.source"},
		{"variables file", "vars/secret.tfvars", filepath.Join(outside, "secret.tfvars"), "{name: a, type: terraform, module: {source: ./modules/net}, variablesFile: {path: vars/secret.tfvars}}", "variablesFile.path"},
		{"overlay", "overlays/x", outside, "{name: a, type: terraform, module: {source: ./modules/net}, overlayFiles: [{paths: [overlays/x]}]}", "overlayFiles[0].paths[0]"},
		{"chart", "charts/leak", outside, "{name: a, type: helm, chart: {path: ./charts/leak}}", "chart.path"},
		{"values file", "charts/values.yaml", filepath.Join(outside, "values.yaml"), "{name: a, type: helm, chart: {path: ./charts/web, valuesFiles: [charts/values.yaml]}}", "chart.valuesFiles[0]"},
		{"manifests", "k8s2", outside, "{name: a, type: manifests, manifests: {path: ./k8s2}}", "manifests.path"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := envDir(t)
			symlink(t, tc.target, filepath.Join(dir, tc.link))
			_, diags := Parse("env.yaml", dir, []byte(header+"    - "+tc.component+"\n"))
			got := strings.Join(render(diags), "\n")
			realTarget, _ := filepath.EvalSymlinks(tc.target)
			want := tc.link + " is a symlink to " + realTarget + ", outside the environment's folder"
			if !strings.Contains(got, "spec.components[0]."+tc.field+": ") || !strings.Contains(got, want) {
				t.Errorf("diagnostics:\n%s\nwant %s: ...%s", got, tc.field, want)
			}
			if !strings.HasPrefix(realTarget, realOutside) {
				t.Fatalf("target %s", realTarget)
			}
		})
	}
}

func TestSymlinksInsideTheEnvironmentAreFollowed(t *testing.T) {
	dir := envDir(t)
	symlink(t, "modules/net", filepath.Join(dir, "net"))                // relative
	symlink(t, filepath.Join(dir, "vars"), filepath.Join(dir, "vars2")) // absolute
	env, diags := Parse("env.yaml", dir, []byte(header+
		"    - {name: a, type: terraform, module: {source: ./net}, variablesFile: {path: vars2/net.tfvars}}\n"))
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	// The path stays as written: what the user named, not where it leads.
	if p, err := env.LocalPath("net"); err != nil || p != filepath.Join(dir, "net") {
		t.Errorf("LocalPath = %q, %v", p, err)
	}
}

func TestBrokenAndLoopingSymlinksAreRefused(t *testing.T) {
	dir := envDir(t)
	symlink(t, "nowhere", filepath.Join(dir, "dangling"))
	symlink(t, "loop-b", filepath.Join(dir, "loop-a"))
	symlink(t, "loop-a", filepath.Join(dir, "loop-b"))
	_, diags := Parse("env.yaml", dir, []byte(header+
		"    - {name: a, type: terraform, module: {source: ./dangling}}\n"+
		"    - {name: b, type: terraform, module: {source: ./loop-a}}\n"))
	got := strings.Join(render(diags), "\n")
	for _, want := range []string{
		`spec.components[0].module.source: path "./dangling": dangling is a symlink to nowhere, which does not exist`,
		`spec.components[1].module.source: path "./loop-a": loop-a is a symlink to loop-b that cannot be followed`,
	} {
		if !strings.Contains(got, want) {
			t.Errorf("diagnostics:\n%s\nwant %s", got, want)
		}
	}
}

// In GitOps the loader is given the commit's tree as the root and the
// environment file's folder as dir: paths resolve from the file's folder,
// may reach anywhere in the tree, and no symlink may leave the tree.
func TestGitOpsRootIsTheCommitsTree(t *testing.T) {
	tree := envDir(t) // a commit's tree: modules/, vars/, ... at its top
	envs := filepath.Join(tree, "envs")
	outside := t.TempDir()
	symlink(t, "../../modules/net", filepath.Join(envs, "modules/net"))
	symlink(t, outside, filepath.Join(envs, "modules/leak"))
	symlink(t, outside, filepath.Join(tree, "leak"))
	realOutside, _ := filepath.EvalSymlinks(outside)

	env, diags := ParseIn("envs/env.yaml", envs, tree, []byte(header+
		"    - {name: a, type: terraform, module: {source: ./modules/net}}\n"))
	if diags.HasErrors() {
		t.Fatalf("a link inside the tree: %v", diags)
	}
	if src, err := env.ModuleSource(env.Spec.Components[0].Module); err != nil || src.Path != filepath.Join(envs, "modules/net") {
		t.Errorf("module source = %+v, %v", src, err)
	}
	for _, tc := range []struct{ source, want string }{
		{"./modules/leak", "envs/modules/leak is a symlink to " + realOutside + ", outside the environment's folder"},
		{"../leak", "leak is a symlink to " + realOutside},
		{"../../x", `path "../../x" leaves the environment's folder`},
	} {
		_, diags := ParseIn("envs/env.yaml", envs, tree, []byte(header+
			"    - {name: a, type: terraform, module: {source: "+tc.source+"}}\n"))
		if got := strings.Join(render(diags), "\n"); !strings.Contains(got, tc.want) {
			t.Errorf("source %s: diagnostics\n%s\nwant %s", tc.source, got, tc.want)
		}
	}
}

func TestContainTree(t *testing.T) {
	root := t.TempDir()
	outside := t.TempDir()
	chart := filepath.Join(root, "chart")
	write := func(p string) {
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(filepath.Join(chart, "Chart.yaml"))
	write(filepath.Join(root, "shared/tpl.yaml"))
	write(filepath.Join(outside, "secret"))
	symlink(t, "../shared", filepath.Join(chart, "templates")) // inside the root: fine
	symlink(t, "..", filepath.Join(chart, "up"))               // a loop through the root: walked once
	if err := ContainTree(root, chart); err != nil {
		t.Fatalf("links inside the root: %v", err)
	}
	// A link out, reached through a link to a folder inside the root.
	symlink(t, filepath.Join(outside, "secret"), filepath.Join(root, "shared/leak"))
	err := ContainTree(root, chart)
	realSecret, _ := filepath.EvalSymlinks(filepath.Join(outside, "secret"))
	if err == nil || !strings.Contains(err.Error(), "/leak is a symlink to "+realSecret+", outside") {
		t.Errorf("link out through a linked folder: %v", err)
	}
}

// A relative environment folder (Parse with ".") compares with absolute
// link targets all the same.
func TestRelativeRootComparesWithAbsoluteTargets(t *testing.T) {
	dir := envDir(t)
	outside := t.TempDir()
	symlink(t, filepath.Join(dir, "modules/net"), filepath.Join(dir, "net"))
	symlink(t, outside, filepath.Join(dir, "leak"))
	t.Chdir(dir)
	_, diags := Parse("env.yaml", ".", []byte(header+
		"    - {name: a, type: terraform, module: {source: ./net}}\n"+
		"    - {name: b, type: terraform, module: {source: ./leak}}\n"))
	got := render(diags)
	if len(got) != 1 || !strings.Contains(got[0], "spec.components[1].module.source") || !strings.Contains(got[0], "leak is a symlink to") {
		t.Errorf("diagnostics: %v", got)
	}
}

// A module someone ran `tofu init` in holds links into a plugin cache
// under .terraform: no run reads them (the copy leaves .terraform out), so
// they are not refused; a link out anywhere else is, named from the
// environment's folder.
func TestContainModuleLeavesOutTheToolsFolders(t *testing.T) {
	root := t.TempDir()
	cache := t.TempDir()
	mod := filepath.Join(root, "modules", "net")
	if err := os.MkdirAll(filepath.Join(mod, ".terraform", "providers"), 0o755); err != nil {
		t.Fatal(err)
	}
	symlink(t, cache, filepath.Join(mod, ".terraform", "providers", "local"))
	if err := ContainModule(root, mod); err != nil {
		t.Fatalf("a module with a plugin-cache link under .terraform: %v", err)
	}
	if err := ContainTree(root, mod); err == nil {
		t.Error("ContainTree, which checks every link, passed the link out under .terraform")
	}
	symlink(t, cache, filepath.Join(mod, "data"))
	err := ContainModule(root, mod)
	want := filepath.Join("modules", "net", "data") + " is a symlink to "
	if err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Errorf("link out of the module: %v; want it named %q", err, want)
	}
}
