package terraform

import (
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"

	"knit.dev/knit/internal/spec"
)

// tree collects files from folders into a layout, applying knit's copy
// rules: the tool's own folders (.terraform), state files and .git are never
// copied; symlinks are followed when their real target stays inside the
// folder being copied, and refused, naming the link and its target,
// otherwise: a link out of the folder, one that leads nowhere, or a loop.
type tree struct {
	files map[string]file
	// skip holds real paths of folders never copied (the component's work
	// dir, should it lie inside the source).
	skip map[string]bool
}

// add adds the files under dir, named prefix/<path below dir>; symlinks must
// stay inside root.
func (t tree) add(root, dir, prefix string) error {
	realRoot, err := filepath.EvalSymlinks(root)
	if err != nil {
		return err
	}
	if _, err := resolve(realRoot, dir); err != nil {
		return err
	}
	return t.walk(realRoot, dir, prefix, map[string]bool{})
}

func (t tree) walk(root, dir, prefix string, visiting map[string]bool) error {
	real, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return err
	}
	if t.skip[real] {
		return nil
	}
	if visiting[real] {
		return fmt.Errorf("symlink loop at %s", dir)
	}
	visiting[real] = true
	defer delete(visiting, real)
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	for _, e := range entries {
		full := filepath.Join(dir, e.Name())
		rel := path.Join(prefix, e.Name())
		target := full
		if e.Type()&fs.ModeSymlink != 0 {
			if target, err = resolve(root, full); err != nil {
				return err
			}
		}
		st, err := os.Stat(target)
		if err != nil {
			return err
		}
		switch {
		case st.IsDir():
			if skipDir(e.Name()) {
				continue
			}
			if visiting[target] {
				return fmt.Errorf("%s is a symlink to %s, a folder that holds it: a symlink loop", full, target)
			}
			if err := t.walk(root, target, rel, visiting); err != nil {
				return err
			}
		case st.Mode().IsRegular():
			if skipFile(e.Name()) {
				continue
			}
			t.files[rel] = file{src: target, mode: modeOf(st)}
		}
	}
	return nil
}

// resolve follows symlinks in p and refuses a target outside root.
func resolve(root, p string) (string, error) {
	realRoot, err := filepath.EvalSymlinks(root)
	if err != nil {
		return "", err
	}
	target, err := filepath.EvalSymlinks(p)
	if err != nil {
		if dest, lerr := os.Readlink(p); lerr == nil {
			return "", fmt.Errorf("%s is a symlink to %s that cannot be followed (missing, or a loop)", p, dest)
		}
		return "", err
	}
	rel, err := filepath.Rel(realRoot, target)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return "", fmt.Errorf("%s is a symlink to %s, outside %s", p, target, root)
	}
	return target, nil
}

func skipDir(name string) bool { return spec.ModuleToolDir(name) }

// skipFile leaves out state, its backups and lock info: state lives outside
// the module copy, and copying someone's state would be wrong.
func skipFile(name string) bool {
	return strings.Contains(name, ".tfstate")
}

func modeOf(st fs.FileInfo) fs.FileMode {
	if st.Mode().Perm()&0o111 != 0 {
		return 0o755
	}
	return 0o644
}

func (f file) read() ([]byte, error) {
	if f.src == "" {
		return f.data, nil
	}
	return os.ReadFile(f.src)
}
