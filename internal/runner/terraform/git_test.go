package terraform_test

import (
	"context"
	"path/filepath"
	"testing"

	"knit.dev/knit/internal/runner"
	"knit.dev/knit/internal/spec"
	"knit.dev/knit/internal/testtools"
)

// gitRepo makes a bare repository in a temp dir and returns its file:// URL.
// main: v1 (tagged) → v2, with modules/echo/main.tf outputting the version;
// branch vars: dev.tfvars and an overlay file.
func gitRepo(t *testing.T) string {
	t.Helper()
	root := t.TempDir()
	work := filepath.Join(root, "work")
	testtools.RunGit(t, root, "init", "-q", "work")
	commit := func(files map[string]string, msg string) {
		testtools.WriteFiles(t, work, files)
		testtools.RunGit(t, work, "add", "-A")
		testtools.RunGit(t, work, "commit", "-q", "-m", msg)
	}
	echo := func(v string) map[string]string {
		return map[string]string{
			"modules/echo/main.tf": `
variable "greeting" {
  type    = string
  default = "none"
}
variable "n" {
  type    = number
  default = 0
}
output "version"  { value = "` + v + `" }
output "greeting" { value = var.greeting }
output "n"        { value = var.n }
`,
			"vars/dev.tfvars":        "greeting = \"from-main\"\n",
			"overlays/git_extra.tf":  `output "git_overlay" { value = "` + v + `" }`,
			"modules/echo/README.md": "echo module " + v,
		}
	}
	commit(echo("v1"), "v1")
	testtools.RunGit(t, work, "tag", "v1")
	testtools.RunGit(t, work, "checkout", "-q", "-b", "vars")
	commit(map[string]string{"vars/dev.tfvars": "greeting = \"from-branch\"\nn = 5\n"}, "vars")
	testtools.RunGit(t, work, "checkout", "-q", "main")
	commit(echo("v2"), "v2: must not be used at ?ref=v1")
	bare := filepath.Join(root, "repo.git")
	testtools.RunGit(t, root, "clone", "-q", "--bare", work, bare)
	return "file://" + bare
}

func TestGitModuleAtTag(t *testing.T) {
	t.Parallel()
	url := gitRepo(t)
	for _, tc := range []struct {
		name string
		mod  *spec.Module
	}{
		{"subdir in source", &spec.Module{Source: "git::" + url + "//modules/echo?ref=v1"}},
		{"module.path", &spec.Module{Source: url + "?ref=v1", Path: "modules/echo"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t, testtools.Tofu(t), nil, &spec.Component{Name: "echo", Module: tc.mod})
			out := f.planApply(nil)
			if out["version"].Value != "v1" {
				t.Errorf("version output = %v, want v1 (the tag, not main)", out["version"].Value)
			}
			// The whole checkout is copied; the tool runs in the subfolder.
			if !fileExists(f.moduleFile("modules/echo/.terraform")) || !fileExists(f.moduleFile("vars/dev.tfvars")) {
				t.Error("module copy is not the checkout with the tool run in modules/echo")
			}
		})
	}
}

func TestVariablesFileAndOverlays(t *testing.T) {
	t.Parallel()
	url := gitRepo(t)
	def := &spec.Component{
		Name:          "echo",
		Module:        &spec.Module{Source: url + "//modules/echo?ref=v1"},
		VariablesFile: &spec.VariablesFile{Source: url, Path: "vars/dev.tfvars", Ref: "vars"},
		OverlayFiles: []spec.OverlayFile{
			{Paths: []string{"overlays/local.tf", "overlaydir"}},
			{Source: url, Ref: "v1", Paths: []string{"overlays/git_extra.tf"}},
		},
		OverlayData: []spec.OverlayData{{Name: "data.tf", Data: `output "data" { value = "from-data" }`}},
	}
	files := map[string]string{
		"overlays/local.tf":       `output "local" { value = "from-file" }`,
		"overlaydir/nested.tf":    `output "nested" { value = "from-folder" }`,
		"overlaydir/sub/data.txt": "kept with its folder",
	}
	f := newFixture(t, testtools.Tofu(t), files, def)
	// Inline variables override the variables file (n = 5 there).
	out := f.planApply(runner.Inputs{"n": 7})
	want := map[string]any{
		"greeting": "from-branch", "n": float64(7), "version": "v1",
		"local": "from-file", "nested": "from-folder", "git_overlay": "v1", "data": "from-data",
	}
	for k, v := range want {
		if out[k].Value != v {
			t.Errorf("output %s = %v, want %v", k, out[k].Value, v)
		}
	}
	for _, rel := range []string{"local.tf", "nested.tf", "sub/data.txt", "git_extra.tf", "data.tf", "00-knit-variables.auto.tfvars", "knit.auto.tfvars.json", "knit_override.tf"} {
		if !fileExists(f.moduleFile("modules/echo/" + rel)) {
			t.Errorf("%s is not in the folder the tool runs in", rel)
		}
	}
	fp1, err := f.r.Fingerprint(context.Background(), f.c, runner.Inputs{"n": 7})
	if err != nil {
		t.Fatal(err)
	}
	f.c.Def.OverlayData[0].Data = `output "data" { value = "changed" }`
	fp2, err := f.r.Fingerprint(context.Background(), f.c, runner.Inputs{"n": 7})
	if err != nil || fp1 == fp2 {
		t.Errorf("fingerprint did not change with overlay data (%v)", err)
	}
}
