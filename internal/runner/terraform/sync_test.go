package terraform

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"knit.dev/knit/internal/runner"
)

func write(t *testing.T, p, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestSyncDir(t *testing.T) {
	t.Parallel()
	dst := t.TempDir()
	l := &layout{sub: "run", files: map[string]file{
		"run/main.tf":    {data: []byte("a"), mode: 0o644},
		"run/same.tf":    {data: []byte("same"), mode: 0o644},
		"run/script.sh":  {data: []byte("#!/bin/sh"), mode: 0o755},
		"lib/mod/x.tf":   {data: []byte("x"), mode: 0o644},
		"run/dir/f.json": {data: []byte("{}"), mode: 0o644},
	}}
	// What a previous run left: tool-owned files, a stale file and folder,
	// and a folder where a file must go.
	write(t, filepath.Join(dst, "run/.terraform/providers/p"), "provider")
	write(t, filepath.Join(dst, "run/.terraform.lock.hcl"), "lock")
	write(t, filepath.Join(dst, "run/stale.tf"), "old")
	write(t, filepath.Join(dst, "gone/deep/old.tf"), "old")
	write(t, filepath.Join(dst, "run/main.tf/inner"), "was a folder")
	write(t, filepath.Join(dst, "run/same.tf"), "same")
	old := time.Now().Add(-time.Hour)
	if err := os.Chtimes(filepath.Join(dst, "run/same.tf"), old, old); err != nil {
		t.Fatal(err)
	}

	// No manifest: the work dir of an older knit, mirrored exactly once.
	if err := syncDir(l, dst, filepath.Join(t.TempDir(), syncedFile)); err != nil {
		t.Fatal(err)
	}
	for rel, f := range l.files {
		got, err := os.ReadFile(filepath.Join(dst, rel))
		if err != nil || string(got) != string(f.data) {
			t.Errorf("%s = %q, %v; want %q", rel, got, err, f.data)
		}
		if st, _ := os.Stat(filepath.Join(dst, rel)); st.Mode().Perm() != f.mode {
			t.Errorf("%s mode = %v, want %v", rel, st.Mode().Perm(), f.mode)
		}
	}
	for _, keep := range []string{"run/.terraform/providers/p", "run/.terraform.lock.hcl"} {
		if _, err := os.Stat(filepath.Join(dst, keep)); err != nil {
			t.Errorf("%s was removed", keep)
		}
	}
	for _, gone := range []string{"run/stale.tf", "gone"} {
		if _, err := os.Stat(filepath.Join(dst, gone)); err == nil {
			t.Errorf("%s is still there", gone)
		}
	}
	if st, _ := os.Stat(filepath.Join(dst, "run/same.tf")); !st.ModTime().Equal(old) {
		t.Error("an unchanged file was rewritten")
	}
	entries, _ := os.ReadDir(filepath.Join(dst, "run"))
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), ".knit-tmp") {
			t.Errorf("temporary file %s left behind", e.Name())
		}
	}
}

// Files the module wrote into its folder (path.module) survive every sync;
// files an earlier sync placed that left the source are deleted, with the
// folders that leaves empty.
func TestSyncKeepsWhatTheModuleWrote(t *testing.T) {
	t.Parallel()
	dst, manifest := t.TempDir(), filepath.Join(t.TempDir(), syncedFile)
	first := &layout{sub: "run", files: map[string]file{
		"run/main.tf":        {data: []byte("a"), mode: 0o644},
		"run/stale.tf":       {data: []byte("old"), mode: 0o644},
		"run/tpl/gone.tpl":   {data: []byte("t"), mode: 0o644},
		"run/tpl/kept.tpl":   {data: []byte("k"), mode: 0o644},
		"lib/old/module.tf":  {data: []byte("m"), mode: 0o644},
		"run/overwritten.tf": {data: []byte("source"), mode: 0o644},
	}}
	if err := syncDir(first, dst, manifest); err != nil {
		t.Fatal(err)
	}
	// What the tool and the module wrote since.
	written := []string{"run/app.conf", "run/out/rendered.txt", "run/.terraform/providers/p", "run/.terraform.lock.hcl", "run/tpl/own.txt"}
	for _, rel := range written {
		write(t, filepath.Join(dst, rel), "the module's")
	}
	write(t, filepath.Join(dst, "run/overwritten.tf"), "edited in the copy")
	second := &layout{sub: "run", files: map[string]file{
		"run/main.tf":        {data: []byte("b"), mode: 0o644},
		"run/tpl/kept.tpl":   {data: []byte("k"), mode: 0o644},
		"run/overwritten.tf": {data: []byte("source"), mode: 0o644},
	}}
	if err := syncDir(second, dst, manifest); err != nil {
		t.Fatal(err)
	}
	for _, rel := range written {
		if got, err := os.ReadFile(filepath.Join(dst, rel)); err != nil || string(got) != "the module's" {
			t.Errorf("%s = %q, %v: the sync deleted or changed what the module wrote", rel, got, err)
		}
	}
	for rel, f := range second.files {
		if got, _ := os.ReadFile(filepath.Join(dst, rel)); string(got) != string(f.data) {
			t.Errorf("%s = %q, want the source's %q", rel, got, f.data)
		}
	}
	for _, gone := range []string{"run/stale.tf", "run/tpl/gone.tpl", "lib"} {
		if _, err := os.Stat(filepath.Join(dst, gone)); err == nil {
			t.Errorf("%s left the source but is still in the copy", gone)
		}
	}
	if got, _ := os.ReadFile(manifest); string(got) != "run/main.tf\nrun/overwritten.tf\nrun/tpl/kept.tpl\n" {
		t.Errorf("manifest = %q", got)
	}

	// A damaged manifest never deletes outside the copy, nor the tool's files.
	outside := filepath.Join(t.TempDir(), "precious")
	write(t, outside, "x")
	rel, _ := filepath.Rel(dst, outside)
	if err := os.WriteFile(manifest, []byte(filepath.ToSlash(rel)+"\n/etc/hostname\nrun/.terraform/providers/p\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := syncDir(second, dst, manifest); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{outside, filepath.Join(dst, "run/.terraform/providers/p")} {
		if _, err := os.Stat(p); err != nil {
			t.Errorf("a damaged manifest deleted %s", p)
		}
	}
}

func TestTreeRules(t *testing.T) {
	t.Parallel()
	src := t.TempDir()
	write(t, filepath.Join(src, "main.tf"), "a")
	write(t, filepath.Join(src, "shared/lib.tf"), "lib")
	write(t, filepath.Join(src, ".git/HEAD"), "ref")
	write(t, filepath.Join(src, ".terraform/x"), "x")
	write(t, filepath.Join(src, "terraform.tfstate"), "{}")
	write(t, filepath.Join(src, "terraform.tfstate.backup"), "{}")
	write(t, filepath.Join(src, ".terraform.lock.hcl"), "lock")
	if err := os.Symlink("shared", filepath.Join(src, "linked")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("main.tf", filepath.Join(src, "alias.tf")); err != nil {
		t.Fatal(err)
	}
	tr := tree{files: map[string]file{}, skip: map[string]bool{}}
	if err := tr.add(src, src, "."); err != nil {
		t.Fatal(err)
	}
	var got []string
	for rel := range tr.files {
		got = append(got, rel)
	}
	want := map[string]bool{"main.tf": true, "shared/lib.tf": true, "linked/lib.tf": true, "alias.tf": true, ".terraform.lock.hcl": true}
	if len(got) != len(want) {
		t.Errorf("files = %v, want %v", got, want)
	}
	for _, rel := range got {
		if !want[rel] {
			t.Errorf("unexpected file %s", rel)
		}
	}

	// A symlink out of the source is refused.
	outside := t.TempDir()
	write(t, filepath.Join(outside, "secret"), "s")
	if err := os.Symlink(filepath.Join(outside, "secret"), filepath.Join(src, "escape")); err != nil {
		t.Fatal(err)
	}
	err := tree{files: map[string]file{}}.add(src, src, ".")
	realSecret, _ := filepath.EvalSymlinks(filepath.Join(outside, "secret"))
	if err == nil || !strings.Contains(err.Error(), filepath.Join(src, "escape")+" is a symlink to "+realSecret+", outside") {
		t.Errorf("symlink out of the source: err = %v", err)
	}
}

// Symlinks inside a module that loop, or lead nowhere, are refused with
// the link named: the copy never follows them (nor out of the folder).
func TestTreeRefusesLoopsAndDanglingLinks(t *testing.T) {
	t.Parallel()
	for name, links := range map[string]map[string]string{
		"link to a parent":   {"sub/up": ".."},
		"link to itself":     {"self": "self"},
		"two links in turn":  {"a": "b", "b": "a"},
		"link to nothing":    {"gone": "nowhere"},
		"link through a dir": {"d/x": "../d"},
	} {
		src := t.TempDir()
		write(t, filepath.Join(src, "main.tf"), "a")
		var first string
		for link, target := range links {
			if err := os.MkdirAll(filepath.Dir(filepath.Join(src, link)), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(target, filepath.Join(src, link)); err != nil {
				t.Fatal(err)
			}
			first = link
		}
		err := tree{files: map[string]file{}, skip: map[string]bool{}}.add(src, src, ".")
		if err == nil {
			t.Errorf("%s: copied", name)
			continue
		}
		if len(links) == 1 && !strings.Contains(err.Error(), filepath.Join(src, first)) {
			t.Errorf("%s: %v does not name the link", name, err)
		}
	}
}

func TestInputsFileIsCanonical(t *testing.T) {
	t.Parallel()
	a, b := &layout{sub: ".", files: map[string]file{}}, &layout{sub: ".", files: map[string]file{}}
	if err := a.addKnitFiles("/w", runner.Inputs{"b": 1, "a": []any{"x"}, "m": map[string]any{"z": 1, "y": 2.5}}, false); err != nil {
		t.Fatal(err)
	}
	if err := b.addKnitFiles("/w", runner.Inputs{"m": map[string]any{"y": 2.5, "z": 1}, "a": []any{"x"}, "b": 1.0}, false); err != nil {
		t.Fatal(err)
	}
	got, other := string(a.files[inputsFile].data), string(b.files[inputsFile].data)
	if got != other {
		t.Errorf("equal inputs gave different files:\n%s\n%s", got, other)
	}
	if !strings.Contains(got, `"b": 1,`) || !strings.Contains(got, `"y": 2.5`) {
		t.Errorf("inputs file = %s", got)
	}
	if !strings.Contains(string(a.files[backendFile].data), `path = "/w/terraform.tfstate"`) {
		t.Errorf("backend file = %s", a.files[backendFile].data)
	}
}
